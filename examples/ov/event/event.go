package event

import (
	"fmt"
	"time"
)

// Version is the schema version this package reads and writes.
const Version = 1

// Default topics: positions keyed by vehicle id, predictions keyed by trip id.
const (
	DefaultPositionsTopic   = "ov.vehicle-positions"
	DefaultPredictionsTopic = "ov.arrival-predictions"
)

// OnTimeThreshold is how late a vehicle may be and still count as on time (the Dutch
// convention: at most 180 s late).
const OnTimeThreshold = 180 * time.Second

// MaxIDLen bounds every text field in bytes.
const MaxIDLen = 64

// Defaults of the zero [Config].
const (
	DefaultMaxDelay = 6 * time.Hour
	DefaultMaxAge   = 24 * time.Hour
	DefaultMaxAhead = 5 * time.Minute
)

// Position is a vehicle's location at ObservedAt.
type Position struct {
	VehicleID  string
	TripID     string
	Line       string
	Operator   string
	Lat, Lon   float64
	Bearing    float64 // degrees clockwise from north, 0 to 360
	ObservedAt time.Time
}

// Prediction is a trip's punctuality at a stop at ObservedAt: DelayS seconds late (negative
// when early).
type Prediction struct {
	TripID     string
	VehicleID  string
	Line       string
	Operator   string
	Stop       string
	DelayS     int32
	ObservedAt time.Time
}

// Late reports whether the prediction counts as late: more than [OnTimeThreshold].
func (p Prediction) Late() bool { return time.Duration(p.DelayS)*time.Second > OnTimeThreshold }

// Box is a latitude/longitude rectangle in degrees, bounds included.
type Box struct {
	MinLat, MaxLat float64
	MinLon, MaxLon float64
}

// Netherlands returns the bounding box of the Netherlands: latitude 50.75 to 53.7, longitude
// 3.2 to 7.22.
func Netherlands() Box { return Box{MinLat: 50.75, MaxLat: 53.7, MinLon: 3.2, MaxLon: 7.22} }

// Contains reports whether (lat, lon) lies inside b.
func (b Box) Contains(lat, lon float64) bool {
	return lat >= b.MinLat && lat <= b.MaxLat && lon >= b.MinLon && lon <= b.MaxLon
}

func (b Box) String() string {
	return fmt.Sprintf("lat %g..%g, lon %g..%g", b.MinLat, b.MaxLat, b.MinLon, b.MaxLon)
}

// Config sets the ranges a [Decoder] accepts. The zero value is the Netherlands with the
// default bounds.
type Config struct {
	// Box bounds coordinates [Netherlands]. A zero Box means the default.
	Box Box
	// MaxDelay bounds the magnitude of a punctuality [DefaultMaxDelay].
	MaxDelay time.Duration
	// MaxAge is how far an event time may lie before the broker's timestamp [DefaultMaxAge].
	MaxAge time.Duration
	// MaxAhead is how far an event time may lie after the broker's timestamp (clock skew)
	// [DefaultMaxAhead].
	MaxAhead time.Duration
}

// Decoder decodes and validates messages against a [Config]. It is immutable and safe for
// concurrent use.
type Decoder struct {
	box              Box
	maxDelayS        int64
	maxAge, maxAhead time.Duration
}

// NewDecoder returns a decoder for cfg, or an error if cfg is out of range: a box that is empty
// or not within -90..90, -180..180, negative bounds.
func NewDecoder(cfg Config) (*Decoder, error) {
	if cfg.Box == (Box{}) {
		cfg.Box = Netherlands()
	}
	b := cfg.Box
	if !(b.MinLat < b.MaxLat && b.MinLon < b.MaxLon && b.MinLat >= -90 && b.MaxLat <= 90 &&
		b.MinLon >= -180 && b.MaxLon <= 180) {
		return nil, fmt.Errorf("event: bounding box must be a non-empty rectangle within lat -90..90, lon -180..180, found %v", b)
	}
	if cfg.MaxDelay < 0 || cfg.MaxAge < 0 || cfg.MaxAhead < 0 {
		return nil, fmt.Errorf("event: bounds must not be negative, found max delay %v, max age %v, max ahead %v",
			cfg.MaxDelay, cfg.MaxAge, cfg.MaxAhead)
	}
	if cfg.MaxDelay == 0 {
		cfg.MaxDelay = DefaultMaxDelay
	}
	if cfg.MaxAge == 0 {
		cfg.MaxAge = DefaultMaxAge
	}
	if cfg.MaxAhead == 0 {
		cfg.MaxAhead = DefaultMaxAhead
	}
	return &Decoder{box: b, maxDelayS: int64(cfg.MaxDelay / time.Second), maxAge: cfg.MaxAge, maxAhead: cfg.MaxAhead}, nil
}

// Config returns the decoder's configuration with defaults applied.
func (d *Decoder) Config() Config {
	return Config{Box: d.box, MaxDelay: time.Duration(d.maxDelayS) * time.Second, MaxAge: d.maxAge, MaxAhead: d.maxAhead}
}
