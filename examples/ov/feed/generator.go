package feed

import (
	"container/heap"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/streamledger/streamledger/examples/ov/event"
)

// Default topics of the feed.
const (
	DefaultPositionsTopic   = event.DefaultPositionsTopic
	DefaultPredictionsTopic = event.DefaultPredictionsTopic
)

// Defaults of the zero [Config] fields.
const (
	DefaultPositionInterval   = 20 * time.Second
	DefaultPredictionInterval = 60 * time.Second
	DefaultWindowSize         = 5 * time.Minute
	DefaultLateness           = 120 * time.Second
	DefaultMaxDisorder        = 60 * time.Second
	dispatchInterval          = 30 * time.Second
)

// Suggested shares for a realistic feed, used by the command line and the demo. A zero share
// in [Config] means none.
const (
	SuggestedDisorderShare  = 0.05
	SuggestedLateShare      = 0.004
	SuggestedMalformedShare = 0.001
)

// DefaultStart is the simulated start when [Config.Start] is zero: Tuesday 10 March 2026,
// 05:00 CET, before the morning peak.
func DefaultStart() time.Time { return time.Date(2026, 3, 10, 5, 0, 0, 0, CET()) }

// ErrConfig is wrapped by every error about a [Config].
var ErrConfig = errors.New("feed: invalid config")

// Config describes a simulated feed. Zero fields take the defaults named on them; Duration is
// required.
type Config struct {
	// Seed selects the network and every random decision: the same Config gives the same
	// records, byte for byte.
	Seed uint64
	// Start is the simulated time of the first event [DefaultStart].
	Start time.Time
	// Duration is how much simulated time the feed covers; events are generated for
	// [Start, Start+Duration) and delivered afterwards if they are delayed.
	Duration time.Duration
	// Scale sizes the network: 1 is the national network (about 45,000 stops and 5,000
	// vehicles at the morning peak), up to 50 for benchmarks of larger networks; 0.02 is a small
	// town's worth, for tests [1].
	Scale float64
	// PositionsTopic and PredictionsTopic name the topics [DefaultPositionsTopic],
	// [DefaultPredictionsTopic].
	PositionsTopic, PredictionsTopic string
	// PositionInterval is how often a vehicle in service reports its position
	// [DefaultPositionInterval]; PredictionInterval how often a trip updates the prediction for
	// its next stop between stops [DefaultPredictionInterval]. Every arrival at a stop is
	// reported too.
	PositionInterval, PredictionInterval time.Duration
	// WindowSize and Lateness are the processor's, so that records meant to be late are
	// delivered far enough beyond them [DefaultWindowSize], [DefaultLateness].
	WindowSize, Lateness time.Duration
	// MaxDisorder bounds how much later than its event time a record that is not meant to be
	// late is delivered: within a partition, records are out of order by at most this much.
	// It must be shorter than Lateness, so that disorder alone never makes an event late
	// [DefaultMaxDisorder].
	MaxDisorder time.Duration
	// DisorderShare is the share of records delayed by up to MaxDisorder (the rest arrive
	// within MaxDisorder/8). LateShare is the share of predictions delivered more than
	// Lateness plus a window after their event time: the late path. MalformedShare is the
	// share of records replaced by a message the decoder rejects: the dead-letter path.
	DisorderShare, LateShare, MalformedShare float64
}

func (c Config) withDefaults() (Config, error) {
	if c.Start.IsZero() {
		c.Start = DefaultStart()
	}
	if c.Scale == 0 {
		c.Scale = 1
	}
	if c.PositionsTopic == "" {
		c.PositionsTopic = DefaultPositionsTopic
	}
	if c.PredictionsTopic == "" {
		c.PredictionsTopic = DefaultPredictionsTopic
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.PositionInterval, DefaultPositionInterval)
	def(&c.PredictionInterval, DefaultPredictionInterval)
	def(&c.WindowSize, DefaultWindowSize)
	def(&c.Lateness, DefaultLateness)
	def(&c.MaxDisorder, DefaultMaxDisorder)
	switch {
	case c.Duration <= 0:
		return c, fmt.Errorf("%w: duration must be positive, found %v", ErrConfig, c.Duration)
	case !(c.Scale > 0 && c.Scale <= 50):
		return c, fmt.Errorf("%w: scale must be in (0, 50], found %v", ErrConfig, c.Scale)
	case c.PositionsTopic == c.PredictionsTopic:
		return c, fmt.Errorf("%w: the two topics must differ, both are %q", ErrConfig, c.PositionsTopic)
	case c.PositionInterval < time.Second || c.PredictionInterval < time.Second:
		return c, fmt.Errorf("%w: intervals must be at least 1s, found %v and %v", ErrConfig, c.PositionInterval, c.PredictionInterval)
	case c.WindowSize <= 0 || c.Lateness < 0 || c.MaxDisorder < 0:
		return c, fmt.Errorf("%w: window %v, lateness %v and disorder %v must not be negative", ErrConfig, c.WindowSize, c.Lateness, c.MaxDisorder)
	case c.MaxDisorder >= c.Lateness:
		return c, fmt.Errorf("%w: max disorder %v must be shorter than the lateness %v", ErrConfig, c.MaxDisorder, c.Lateness)
	}
	for _, s := range []float64{c.DisorderShare, c.LateShare, c.MalformedShare} {
		if !(s >= 0 && s <= 1) {
			return c, fmt.Errorf("%w: shares must be in [0, 1], found %v", ErrConfig, s)
		}
	}
	return c, nil
}

// Intent says what a record was generated to exercise. The oracle and the processor decide
// from the bytes alone; tests compare their decisions with the intent.
type Intent uint8

const (
	// Normal records are valid and delivered within MaxDisorder of their event time.
	Normal Intent = iota
	// Late records are valid predictions delivered beyond the lateness.
	Late
	// Malformed records are rejected by the decoder.
	Malformed
)

func (i Intent) String() string {
	switch i {
	case Normal:
		return "normal"
	case Late:
		return "late"
	case Malformed:
		return "malformed"
	}
	return fmt.Sprintf("Intent(%d)", uint8(i))
}

// Record is one message of the feed.
type Record struct {
	Topic string
	// Key is the vehicle id (positions) or trip id (predictions); [Partition] places it.
	Key   []byte
	Value []byte
	// Timestamp is the Kafka timestamp (CreateTime): the simulated instant the message reaches
	// the broker, in whole milliseconds. Records are in Timestamp order.
	Timestamp time.Time
	// Intent and Fault (the kind of corruption of a malformed record, such as "truncated")
	// are what the generator meant; they are not part of the message.
	Intent Intent
	Fault  string
}

// Stats describes what a generator produced so far.
type Stats struct {
	Records, Positions, Predictions int
	Late, Malformed                 int // by intent
	Faults                          map[string]int
	// LatePredictions counts valid predictions more than event.OnTimeThreshold late.
	LatePredictions int
	Trips           int
	PeakVehicles    int
	PeakAt          time.Time
	// Network size: operators, lines, stops (quays and stations) on some line, all stops.
	Operators, Lines, StopsServed, Stops int
}

// Generator produces the records of a [Config] one at a time, in Timestamp order, with memory
// proportional to the vehicles in service rather than to the length of the feed.
type Generator struct {
	cfg   Config
	rng   *rand.Rand
	net   *network
	start int64
	end   int64
	now   int64 // simulated time: every event before it has been generated

	trips        tripHeap
	pending      pendingHeap
	nextDispatch int64
	warm         bool
	simDone      bool
	seq          uint64
	tripSeq      []int
	active       []int
	idle         [][]string
	date         string
	buf          []byte
	stats        Stats
	activeTotal  int
}

// New returns a generator for cfg.
func New(cfg Config) (*Generator, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x6f76_6665_6564_2121))
	net := buildNetwork(rng, cfg.Scale)
	g := &Generator{
		cfg:          cfg,
		rng:          rng,
		net:          net,
		start:        cfg.Start.UnixNano(),
		end:          cfg.Start.Add(cfg.Duration).UnixNano(),
		warm:         true,
		tripSeq:      make([]int, len(net.operators)),
		active:       make([]int, len(net.operators)),
		idle:         make([][]string, len(net.operators)),
		date:         cfg.Start.In(CET()).Format("20060102"),
		stats:        Stats{Faults: map[string]int{}, Operators: len(net.operators), Lines: len(net.lines)},
		nextDispatch: cfg.Start.UnixNano(),
	}
	g.now = g.start
	served := map[string]bool{}
	for _, l := range net.lines {
		for _, p := range l.places {
			served[net.places[p].ids[0]] = true
			served[net.places[p].ids[1]] = true
		}
	}
	g.stats.StopsServed = len(served)
	for _, p := range net.places {
		g.stats.Stops++
		if p.ids[1] != p.ids[0] {
			g.stats.Stops++
		}
	}
	for oi, op := range net.operators {
		for v := range net.fleet[oi] {
			g.idle[oi] = append(g.idle[oi], fmt.Sprintf("%s:%d", op.code, 1001+v))
		}
	}
	return g, nil
}

// Config returns the configuration with defaults applied.
func (g *Generator) Config() Config { return g.cfg }

// Stats returns what the generator produced so far.
func (g *Generator) Stats() Stats {
	s := g.stats
	s.Faults = make(map[string]int, len(g.stats.Faults))
	for k, v := range g.stats.Faults {
		s.Faults[k] = v
	}
	return s
}

// Operators lists the operators of the simulated network.
func (g *Generator) Operators() []Operator {
	out := make([]Operator, len(g.net.operators))
	for i, op := range g.net.operators {
		out[i] = Operator{Code: op.code, Lines: len(g.net.byOp[i]), Vehicles: g.net.fleet[i]}
	}
	return out
}

// Next returns the next record in Timestamp order, or false when the feed is over.
func (g *Generator) Next() (Record, bool) {
	for {
		if g.pending.Len() > 0 && (g.simDone || g.pending[0].arrival <= g.now) {
			p := heap.Pop(&g.pending).(pendingRecord)
			g.stats.Records++
			return p.rec, true
		}
		if g.simDone {
			return Record{}, false
		}
		g.step()
	}
}

// Generate returns every record of cfg, in Timestamp order, and the generator's statistics.
func Generate(cfg Config) ([]Record, Stats, error) {
	g, err := New(cfg)
	if err != nil {
		return nil, Stats{}, err
	}
	var out []Record
	for {
		r, ok := g.Next()
		if !ok {
			return out, g.Stats(), nil
		}
		out = append(out, r)
	}
}

// step advances the simulation by one action: a dispatch or one trip's next event.
func (g *Generator) step() {
	next := g.nextDispatch
	if g.trips.Len() > 0 && g.trips[0].next() < next {
		next = g.trips[0].next()
	}
	if next >= g.end {
		g.simDone = true
		g.now = g.end
		return
	}
	g.now = next
	if next == g.nextDispatch {
		g.dispatch(next)
		g.nextDispatch += int64(dispatchInterval)
		return
	}
	tr := g.trips[0]
	if g.advance(tr, next) {
		heap.Fix(&g.trips, 0)
	} else {
		heap.Pop(&g.trips)
		g.active[tr.op]--
		g.activeTotal--
		g.idle[tr.op] = append(g.idle[tr.op], tr.vehicle)
	}
}

// dispatch starts trips until each operator has its share of the day curve in service. The
// first dispatch starts trips part way along their line, as if the day had been running.
func (g *Generator) dispatch(t int64) {
	act := activity(t)
	for oi := range g.net.operators {
		target := int(math.Round(float64(g.net.fleet[oi]) * act))
		for g.active[oi] < target && len(g.idle[oi]) > 0 && len(g.net.byOp[oi]) > 0 {
			v := g.idle[oi][0]
			g.idle[oi] = g.idle[oi][1:]
			g.startTrip(t, oi, v)
		}
	}
	g.warm = false
	if g.activeTotal > g.stats.PeakVehicles {
		g.stats.PeakVehicles = g.activeTotal
		g.stats.PeakAt = time.Unix(0, t).UTC()
	}
}

type trip struct {
	id, vehicle string
	op          int
	line        *line
	dir         int
	num         uint64 // start order, the heap's tie-break
	k           int    // on the segment from travel stop k to k+1
	depart      int64  // actual departure from stop k
	arrive      int64  // actual arrival at stop k+1
	delayDep    float64
	delayArr    float64
	nextPos     int64
	nextPred    int64
}

func (tr *trip) next() int64 { return min(tr.nextPos, tr.nextPred, tr.arrive) }

func (tr *trip) stops() int { return len(tr.line.places) }

// place returns the place at travel index i.
func (tr *trip) place(net *network, i int) place {
	if tr.dir == 0 {
		return net.places[tr.line.places[i]]
	}
	return net.places[tr.line.places[len(tr.line.places)-1-i]]
}

func (tr *trip) segKm(i int) float64 {
	if tr.dir == 0 {
		return tr.line.segKm[i]
	}
	return tr.line.segKm[len(tr.line.segKm)-1-i]
}

func (g *Generator) startTrip(t int64, oi int, vehicle string) {
	lines := g.net.byOp[oi]
	l := &g.net.lines[lines[g.rng.IntN(len(lines))]]
	g.tripSeq[oi]++
	g.stats.Trips++
	tr := &trip{
		id:      fmt.Sprintf("%s:%s:%s:%d", g.net.operators[oi].code, g.date, l.id[len(g.net.operators[oi].code)+1:], g.tripSeq[oi]),
		vehicle: vehicle,
		op:      oi,
		line:    l,
		dir:     g.rng.IntN(2),
		num:     g.seq,
	}
	g.seq++
	// Most trips leave on time or a little late; some leave well behind (a late vehicle from
	// the previous trip, a crew change).
	tr.delayDep = math.Max(-30, 15+g.rng.NormFloat64()*40)
	if g.rng.Float64() < lateStart {
		tr.delayDep += g.rng.ExpFloat64() * lateStartMeanS
	}
	tr.depart = t
	frac := 0.0
	if g.warm {
		// Joining a trip in progress: run the delay through the segments already driven.
		k := g.rng.IntN(tr.stops() - 1)
		for tr.k = 0; tr.k < k; tr.k++ {
			g.segment(tr)
			tr.delayDep = max(tr.delayArr, -30)
		}
		frac = g.rng.Float64()
	}
	g.segment(tr)
	if g.warm {
		shift := int64(frac * float64(tr.arrive-tr.depart))
		tr.depart -= shift
		tr.arrive -= shift
	}
	tr.nextPos = t + g.rng.Int64N(int64(g.cfg.PositionInterval))
	tr.nextPred = t + g.rng.Int64N(int64(g.cfg.PredictionInterval))
	g.clampPred(tr)
	heap.Push(&g.trips, tr)
	g.active[oi]++
	g.activeTotal++
}

// The delay model's parameters, tuned so that at the morning peak 10 to 15% of predictions are
// late (more than 180 s), and over a day 6 to 20%.
const (
	driftShare     = 0.018 // congestion at full activity, as a share of the timetabled time
	noiseShare     = 0.09
	recovery       = 0.07 // share of the delay made up per segment by slack in the timetable
	lateStart      = 0.06
	lateStartMeanS = 300
	incidentBus    = 0.003
	incidentTrain  = 0.01
)

// segment draws the running time of the trip's current segment from its departure: the
// timetable's time plus congestion that grows with the day curve, noise, recovery of earlier
// delay from slack in the timetable, and now and then an incident with a heavy (Pareto) tail.
func (g *Generator) segment(tr *trip) {
	m := tr.line.mode
	sched := tr.segKm(tr.k)/m.speedKmh()*3600 + m.dwellS()
	act := activity(tr.depart)
	delta := sched*driftShare*act + g.rng.NormFloat64()*(noiseShare*sched+5)
	if tr.delayDep > 0 {
		delta -= math.Min(tr.delayDep*recovery, 20)
	}
	incident := incidentBus
	if m == train {
		incident = incidentTrain
	}
	if g.rng.Float64() < incident {
		delta += 60 * math.Pow(1-g.rng.Float64(), -1/1.1) // Pareto, x_m 60 s, alpha 1.1
	}
	dur := math.Max(sched+delta, 10)
	tr.delayArr = math.Min(tr.delayDep+dur-sched, 4*3600)
	dur = sched + tr.delayArr - tr.delayDep
	tr.arrive = tr.depart + int64(dur*float64(time.Second))
}

// clampPred keeps a trip's periodic prediction at least a second away from its arrival, so
// that no two messages of a trip share an event time.
func (g *Generator) clampPred(tr *trip) {
	if tr.nextPred > tr.arrive-int64(time.Second) {
		tr.nextPred = math.MaxInt64
	}
}

// advance handles the trip's next event at t and reports whether the trip continues.
func (g *Generator) advance(tr *trip, t int64) bool {
	switch t {
	case tr.arrive:
		g.emitPrediction(tr, t, tr.k+1, tr.delayArr)
		if tr.k+2 >= tr.stops() {
			return false
		}
		tr.k++
		tr.depart = t
		tr.delayDep = tr.delayArr
		if tr.delayDep < -30 { // running early: wait at the stop
			tr.depart += int64((-30 - tr.delayDep) * float64(time.Second))
			tr.delayDep = -30
		}
		g.segment(tr)
		tr.nextPred = t + int64(g.cfg.PredictionInterval)
		g.clampPred(tr)
	case tr.nextPos:
		g.emitPosition(tr, t)
		jitter := int64(g.cfg.PositionInterval) / 10
		tr.nextPos = t + int64(g.cfg.PositionInterval) - jitter + g.rng.Int64N(2*jitter+1)
	default:
		frac := tr.frac(t)
		predicted := tr.delayDep + (tr.delayArr-tr.delayDep)*frac + g.rng.NormFloat64()*10
		g.emitPrediction(tr, t, tr.k+1, predicted)
		tr.nextPred = t + int64(g.cfg.PredictionInterval)
		g.clampPred(tr)
	}
	return true
}

func (tr *trip) frac(t int64) float64 {
	if t <= tr.depart || tr.arrive <= tr.depart {
		return 0
	}
	return math.Min(1, float64(t-tr.depart)/float64(tr.arrive-tr.depart))
}

func round6(v float64) float64 { return math.Round(v*1e6) / 1e6 }

func (g *Generator) emitPosition(tr *trip, t int64) {
	a, b := tr.place(g.net, tr.k), tr.place(g.net, tr.k+1)
	f := tr.frac(t)
	p := event.Position{
		VehicleID: tr.vehicle,
		TripID:    tr.id,
		Line:      tr.line.id,
		Operator:  g.net.operators[tr.op].code,
		Lat:       round6(a.lat + (b.lat-a.lat)*f + g.rng.NormFloat64()*0.00004),
		Lon:       round6(a.lon + (b.lon-a.lon)*f + g.rng.NormFloat64()*0.00006),
		Bearing:   math.Round(bearingDeg(a.lat, a.lon, b.lat, b.lon)*10) / 10,
	}
	if p.Bearing == 360 {
		p.Bearing = 0
	}
	g.stats.Positions++
	g.deliver(g.cfg.PositionsTopic, tr.vehicle, t, false, func(ts time.Time) (event.Position, event.Prediction) {
		p.ObservedAt = ts
		return p, event.Prediction{}
	})
}

func (g *Generator) emitPrediction(tr *trip, t int64, stop int, delay float64) {
	p := event.Prediction{
		TripID:    tr.id,
		VehicleID: tr.vehicle,
		Line:      tr.line.id,
		Operator:  g.net.operators[tr.op].code,
		Stop:      tr.place(g.net, stop).ids[tr.dir],
		DelayS:    int32(math.Round(delay)),
	}
	g.stats.Predictions++
	g.deliver(g.cfg.PredictionsTopic, tr.id, t, true, func(ts time.Time) (event.Position, event.Prediction) {
		p.ObservedAt = ts
		return event.Position{}, p
	})
}

// deliver decides when the message of an event at t reaches the broker, and whether it is
// corrupted, then queues it. The order of random draws is fixed, so that the output depends
// on the seed alone.
func (g *Generator) deliver(topic, key string, t int64, prediction bool, build func(time.Time) (event.Position, event.Prediction)) {
	const ms = int64(time.Millisecond)
	t -= t % ms
	malformed := g.rng.Float64() < g.cfg.MalformedShare
	late := prediction && !malformed && g.rng.Float64() < g.cfg.LateShare
	disordered := g.rng.Float64() < g.cfg.DisorderShare
	d := math.Min(g.rng.ExpFloat64()*1.5, g.cfg.MaxDisorder.Seconds()/8)
	if disordered {
		d += g.rng.Float64() * g.cfg.MaxDisorder.Seconds() * 7 / 8
	}
	arrival := t + int64(d*float64(time.Second))
	intent := Normal
	if late {
		intent = Late
		beyond := g.cfg.Lateness + g.cfg.WindowSize + g.cfg.MaxDisorder + 30*time.Second
		arrival = t + int64(beyond) + g.rng.Int64N(int64(10*time.Minute))
	}
	arrival = max(arrival, t)
	ts := time.Unix(0, arrival-arrival%ms).UTC()
	pos, pred := build(time.Unix(0, t).UTC())
	g.buf = g.buf[:0]
	if prediction {
		g.buf = event.AppendPrediction(g.buf, pred)
	} else {
		g.buf = event.AppendPosition(g.buf, pos)
	}
	var fault string
	value := g.buf
	if malformed {
		intent = Malformed
		value, fault = g.corrupt(value, prediction, pos, pred, ts)
	} else if prediction && pred.Late() {
		g.stats.LatePredictions++
	}
	switch intent {
	case Late:
		g.stats.Late++
	case Malformed:
		g.stats.Malformed++
		g.stats.Faults[fault]++
	}
	rec := Record{Topic: topic, Key: []byte(key), Value: append([]byte(nil), value...), Timestamp: ts, Intent: intent, Fault: fault}
	heap.Push(&g.pending, pendingRecord{rec: rec, arrival: arrival, seq: g.seq})
	g.seq++
}

type pendingRecord struct {
	rec     Record
	arrival int64
	seq     uint64
}

type pendingHeap []pendingRecord

func (h pendingHeap) Len() int { return len(h) }
func (h pendingHeap) Less(i, j int) bool {
	if h[i].arrival != h[j].arrival {
		return h[i].arrival < h[j].arrival
	}
	return h[i].seq < h[j].seq
}
func (h pendingHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *pendingHeap) Push(x any)   { *h = append(*h, x.(pendingRecord)) }
func (h *pendingHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

type tripHeap []*trip

func (h tripHeap) Len() int { return len(h) }
func (h tripHeap) Less(i, j int) bool {
	a, b := h[i].next(), h[j].next()
	if a != b {
		return a < b
	}
	return h[i].num < h[j].num
}
func (h tripHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *tripHeap) Push(x any)   { *h = append(*h, x.(*trip)) }
func (h *tripHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
