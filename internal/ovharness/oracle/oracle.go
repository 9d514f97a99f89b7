package oracle

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/streamledger/streamledger/examples/ov/event"
	"github.com/streamledger/streamledger/examples/ov/feed"
	"github.com/streamledger/streamledger/examples/ov/tables"
	"github.com/streamledger/streamledger/window"
)

// spec is delay_aggregates' specification: partials keep its exact limit of values, and
// merged rows take its quantile by its method.
var spec = tables.Aggregates()

// newStats returns an empty partial's stats with the spec's exact limit.
func newStats() (*window.Stats, error) {
	s := window.NewStats()
	if err := s.SetExactLimit(spec.ExactLimit); err != nil {
		return nil, fmt.Errorf("oracle: %w", err)
	}
	return s, nil
}

// Config is what the oracle needs to know about the processor and the topics.
type Config struct {
	PositionsTopic, PredictionsTopic string
	// Partitions is the partition count of each topic.
	Partitions int32
	WindowSize time.Duration
	Lateness   time.Duration
	Decoder    *event.Decoder
	// Advances are the idle advances the processor made, as observed from outside (the
	// partition's closed_through, or its commit metadata, once the advance is final). Without
	// them the oracle assumes that no partition went idle while it still had records to come.
	Advances []Advance
	// Lost are ranges of offsets whose records were deleted (retention, DeleteRecords) before
	// the processor read them: the oracle counts their offsets in a partition's Records and
	// Lost, and decides nothing of them, as the processor never saw them.
	Lost []LostRange
}

// LostRange is the offsets [From, To) of Source, deleted before they were read.
type LostRange struct {
	Source   Source
	From, To int64
}

// Advance is an idle advance of one partition's watermark, observed: the processor raised
// wm(Source) to Watermark while the partition was idle, before it decided the record at Offset
// (the partition's next record; Offset equal to the partition's record count applies after
// the last). The design's rule is applied as is: wm = max(wm, Watermark), so an advance at or
// below the watermark changes nothing, and any later prediction whose window ends at or before
// the new watermark is late.
type Advance struct {
	Source    Source
	Offset    int64
	Watermark time.Time
}

// Source is one (topic, partition).
type Source struct {
	Topic     string
	Partition int32
}

func (s Source) String() string { return fmt.Sprintf("%s/%d", s.Topic, s.Partition) }

func compareSources(a, b Source) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

// Counts are the decisions of one partition or of all. Consumed = Admitted + Late +
// DeadLettered.
type Counts struct {
	Consumed, Admitted, Late, DeadLettered int64
}

func (c *Counts) add(o Counts) {
	c.Consumed += o.Consumed
	c.Admitted += o.Admitted
	c.Late += o.Late
	c.DeadLettered += o.DeadLettered
}

// Partition is the oracle's account of one partition.
type Partition struct {
	Counts
	// Records is the number of records (the partition's end offset), Lost those of them in
	// the Config's lost ranges.
	Records, Lost int64
	// MaxEventTime is the latest event time seen, zero when no record decoded. Watermark is
	// wm(P) after the last record: MaxEventTime - lateness, or the highest idle advance (see
	// [Advance]) when that is higher; zero while unknown.
	MaxEventTime, Watermark time.Time
}

// Letter is a dead letter: the record, where it was, and why.
type Letter struct {
	Source Source
	Offset int64
	Record feed.Record
	Err    error
}

// Ref locates a record.
type Ref struct {
	Source Source
	Offset int64
}

// AggKey is the primary key of delay_aggregates.
type AggKey struct {
	WindowStart time.Time
	Dimension   string
	DimensionID string
}

func (k AggKey) String() string {
	return fmt.Sprintf("%s %s=%s", k.WindowStart.Format(time.RFC3339), k.Dimension, k.DimensionID)
}

// AggRow is one row of delay_aggregates, as the oracle expects it.
type AggRow struct {
	WindowEnd time.Time
	Operator  string // empty for NULL
	Count     int64
	Mean      float64
	P90       float64
	Max, Min  float64
}

// VehicleRow is one row of vehicle_latest.
type VehicleRow struct {
	TripID, RouteID, Operator string
	Lat, Lon, Bearing         float64
	ObservedAt                time.Time
}

// TripRow is one row of trip_delay_latest.
type TripRow struct {
	Line, Operator, Stop string
	DelayS               int32
	ObservedAt           time.Time
}

// partial is the aggregate of one key in one window of one partition.
type partial struct {
	end           time.Time
	operator      string
	count         int64
	sum, min, max float64
	stats         *window.Stats
}

type pkey struct {
	start int64 // window start, Unix nanoseconds
	dim   string
	id    string
}

// Result is everything the oracle computed.
type Result struct {
	cfg        Config
	Partitions map[Source]*Partition
	Total      Counts
	// DeadLetters are in (topic, partition, offset) order; Late likewise.
	DeadLetters []Letter
	Late        []Ref
	Vehicles    map[string]VehicleRow
	Trips       map[string]TripRow
	// MaxOpen is the largest number of distinct (window, key) aggregates open at once over
	// all partitions, at MaxOpenAt (the timestamp of the record that opened the last of them);
	// MaxOpenPartials counts them per partition (a key open in two partitions counts twice).
	MaxOpen         int
	MaxOpenAt       time.Time
	MaxOpenPartials int

	partials map[Source]map[pkey]*partial
	// windowed holds, per partition, the offsets and window ends of admitted predictions.
	windowed map[Source][]offsetEnd
}

type offsetEnd struct {
	offset int64
	end    time.Time
}

// lww keeps the winning state row of a key: the later observed_at, ties to the later offset.
type lwwMark struct {
	at  time.Time
	src Source
	off int64
}

// Compute runs the oracle over records in their order (the order they were produced).
func Compute(cfg Config, records []feed.Record) (*Result, error) {
	if cfg.Partitions <= 0 || cfg.WindowSize <= 0 || cfg.Lateness < 0 || cfg.Decoder == nil ||
		cfg.PositionsTopic == "" || cfg.PredictionsTopic == "" {
		return nil, fmt.Errorf("oracle: incomplete config %+v", cfg)
	}
	advances, err := sortAdvances(cfg)
	if err != nil {
		return nil, err
	}
	ps := newPass(cfg, advances)
	for _, rec := range records {
		if err := ps.record(rec); err != nil {
			return nil, err
		}
	}
	ps.finish()
	return ps.r, nil
}

// pass is the state of one pass over the records: the result so far, the advances still to
// apply, the winning marks of the state rows and the open (window, key) aggregates.
type pass struct {
	cfg      Config
	r        *Result
	advances map[Source][]Advance
	size     int64 // the window size, in nanoseconds

	vehicleMark, tripMark map[string]lwwMark
	// Open (window, key) aggregates: per partition by window end, and a count over partitions.
	openByEnd    map[Source]map[int64][]pkey
	openRefs     map[pkey]int
	openPartials int
}

func newPass(cfg Config, advances map[Source][]Advance) *pass {
	return &pass{
		cfg: cfg,
		r: &Result{
			cfg:        cfg,
			Partitions: map[Source]*Partition{},
			Vehicles:   map[string]VehicleRow{},
			Trips:      map[string]TripRow{},
			partials:   map[Source]map[pkey]*partial{},
			windowed:   map[Source][]offsetEnd{},
		},
		advances:    advances,
		size:        int64(cfg.WindowSize),
		vehicleMark: map[string]lwwMark{},
		tripMark:    map[string]lwwMark{},
		openByEnd:   map[Source]map[int64][]pkey{},
		openRefs:    map[pkey]int{},
	}
}

// decoded is a record that decoded: its event time and the event of its topic.
type decoded struct {
	at   time.Time
	pos  event.Position
	pred event.Prediction
}

// record decides one record, the next of its partition.
func (ps *pass) record(rec feed.Record) error {
	cfg := ps.cfg
	var src Source
	switch rec.Topic {
	case cfg.PositionsTopic, cfg.PredictionsTopic:
		src = Source{Topic: rec.Topic, Partition: feed.Partition(rec.Key, cfg.Partitions)}
	default:
		return fmt.Errorf("oracle: record on topic %q, neither %q nor %q", rec.Topic, cfg.PositionsTopic, cfg.PredictionsTopic)
	}
	p := ps.r.Partitions[src]
	if p == nil {
		p = &Partition{}
		ps.r.Partitions[src] = p
	}
	off := p.Records
	ps.advanceTo(src, p, off)
	p.Records++
	if ps.lost(src, off) {
		p.Lost++
		return nil
	}
	p.Consumed++

	ev, err := ps.decode(src, rec)
	if err != nil {
		p.DeadLettered++
		ps.r.DeadLetters = append(ps.r.DeadLetters, Letter{Source: src, Offset: off, Record: rec, Err: err})
		return nil
	}
	t := ev.at.UnixNano()
	start := t - mod(t, ps.size)
	end := start + ps.size
	// The watermark is known once an event was seen or an advance applied, the zero
	// time before.
	known := !p.Watermark.IsZero()
	late := src.Topic == cfg.PredictionsTopic && known && end <= p.Watermark.UnixNano()
	ps.observe(p, ev.at, known)
	if late {
		p.Late++
		ps.r.Late = append(ps.r.Late, Ref{Source: src, Offset: off})
		return nil
	}
	p.Admitted++
	mark := lwwMark{at: ev.at, src: src, off: off}
	if src.Topic == cfg.PositionsTopic {
		ps.offerVehicle(ev.pos, mark)
	} else {
		ps.offerTrip(ev.pred, mark)
		if err := ps.addPrediction(src, rec, off, ev.pred, start, end); err != nil {
			return err
		}
	}
	if src.Topic == cfg.PredictionsTopic && known {
		ps.closeThrough(src, p.Watermark.UnixNano())
	}
	return nil
}

// lost reports whether off of src is in one of the Config's lost ranges.
func (ps *pass) lost(src Source, off int64) bool {
	for _, l := range ps.cfg.Lost {
		if l.Source == src && off >= l.From && off < l.To {
			return true
		}
	}
	return false
}

// decode decodes rec as an event of src's topic.
func (ps *pass) decode(src Source, rec feed.Record) (decoded, error) {
	var ev decoded
	var err error
	if src.Topic == ps.cfg.PositionsTopic {
		ev.pos, err = ps.cfg.Decoder.DecodePosition(rec.Value, rec.Timestamp)
		ev.at = ev.pos.ObservedAt
	} else {
		ev.pred, err = ps.cfg.Decoder.DecodePrediction(rec.Value, rec.Timestamp)
		ev.at = ev.pred.ObservedAt
	}
	return ev, err
}

// observe raises p's latest event time to at, and its watermark with it (known: whether the
// watermark was known before this event).
func (ps *pass) observe(p *Partition, at time.Time, known bool) {
	if p.MaxEventTime.IsZero() || at.After(p.MaxEventTime) {
		p.MaxEventTime = at
		if w := at.Add(-ps.cfg.Lateness); !known || w.After(p.Watermark) {
			p.Watermark = w
		}
	}
}

// offerVehicle makes pos the vehicle's row unless the row held is of a later event.
func (ps *pass) offerVehicle(pos event.Position, mark lwwMark) {
	if old, ok := ps.vehicleMark[pos.VehicleID]; !ok || !mark.at.Before(old.at) {
		ps.vehicleMark[pos.VehicleID] = mark
		ps.r.Vehicles[pos.VehicleID] = VehicleRow{TripID: pos.TripID, RouteID: pos.Line, Operator: pos.Operator,
			Lat: pos.Lat, Lon: pos.Lon, Bearing: pos.Bearing, ObservedAt: mark.at}
	}
}

// offerTrip makes pred the trip's row unless the row held is of a later event.
func (ps *pass) offerTrip(pred event.Prediction, mark lwwMark) {
	if old, ok := ps.tripMark[pred.TripID]; !ok || !mark.at.Before(old.at) {
		ps.tripMark[pred.TripID] = mark
		ps.r.Trips[pred.TripID] = TripRow{Line: pred.Line, Operator: pred.Operator, Stop: pred.Stop, DelayS: pred.DelayS, ObservedAt: mark.at}
	}
}

// addPrediction adds an admitted prediction's delay to its window [start, end) under each of
// its keys in src's partials, opening the partials it is the first of.
func (ps *pass) addPrediction(src Source, rec feed.Record, off int64, pred event.Prediction, start, end int64) error {
	r := ps.r
	parts := r.partials[src]
	if parts == nil {
		parts = map[pkey]*partial{}
		r.partials[src] = parts
		ps.openByEnd[src] = map[int64][]pkey{}
	}
	r.windowed[src] = append(r.windowed[src], offsetEnd{offset: off, end: time.Unix(0, end).UTC()})
	v := float64(pred.DelayS)
	for _, k := range tables.KeysOf(pred) {
		pk := pkey{start: start, dim: k.Dimension, id: k.ID}
		pa := parts[pk]
		if pa == nil {
			st, err := newStats()
			if err != nil {
				return err
			}
			pa = &partial{end: time.Unix(0, end).UTC(), operator: k.Operator, min: v, max: v, stats: st}
			parts[pk] = pa
			ps.openByEnd[src][end] = append(ps.openByEnd[src][end], pk)
			ps.openRefs[pk]++
			ps.openPartials++
		}
		pa.count++
		pa.sum += v
		pa.min = math.Min(pa.min, v)
		pa.max = math.Max(pa.max, v)
		if err := pa.stats.Add(v); err != nil {
			return fmt.Errorf("oracle: %s: %w", src, err)
		}
	}
	if len(ps.openRefs) > r.MaxOpen {
		r.MaxOpen = len(ps.openRefs)
		r.MaxOpenAt = rec.Timestamp
	}
	r.MaxOpenPartials = max(r.MaxOpenPartials, ps.openPartials)
	return nil
}

// closeThrough closes src's open aggregates whose window ends at or before wm.
func (ps *pass) closeThrough(src Source, wm int64) {
	ends := ps.openByEnd[src]
	for end, keys := range ends {
		if end > wm {
			continue
		}
		for _, k := range keys {
			if ps.openRefs[k]--; ps.openRefs[k] == 0 {
				delete(ps.openRefs, k)
			}
		}
		ps.openPartials -= len(keys)
		delete(ends, end)
	}
}

// advanceTo applies the advances of src due before the record at offset off.
func (ps *pass) advanceTo(src Source, p *Partition, off int64) {
	for len(ps.advances[src]) > 0 && ps.advances[src][0].Offset <= off {
		if w := ps.advances[src][0].Watermark; p.Watermark.IsZero() || w.After(p.Watermark) {
			p.Watermark = w
			if src.Topic == ps.cfg.PredictionsTopic {
				ps.closeThrough(src, w.UnixNano())
			}
		}
		ps.advances[src] = ps.advances[src][1:]
	}
}

// finish applies the advances after each partition's last record, adds up the totals and
// sorts the dead letters and late records.
func (ps *pass) finish() {
	r := ps.r
	// Advances after a partition's last record still raise its final watermark.
	for src, as := range ps.advances {
		if len(as) == 0 {
			continue
		}
		// A partition without records has nothing to decide and no progress to check.
		if p := r.Partitions[src]; p != nil {
			ps.advanceTo(src, p, p.Records)
		}
	}
	for _, p := range r.Partitions {
		r.Total.add(p.Counts)
	}
	slices.SortFunc(r.DeadLetters, func(a, b Letter) int {
		return cmp.Or(compareSources(a.Source, b.Source), cmp.Compare(a.Offset, b.Offset))
	})
	slices.SortFunc(r.Late, func(a, b Ref) int {
		return cmp.Or(compareSources(a.Source, b.Source), cmp.Compare(a.Offset, b.Offset))
	})
}

// sortAdvances checks cfg.Advances and returns them per partition in offset order (a stable
// sort: two advances at one offset apply in the order given, the higher winning either way).
func sortAdvances(cfg Config) (map[Source][]Advance, error) {
	out := map[Source][]Advance{}
	for _, a := range cfg.Advances {
		if (a.Source.Topic != cfg.PositionsTopic && a.Source.Topic != cfg.PredictionsTopic) ||
			a.Source.Partition < 0 || a.Source.Partition >= cfg.Partitions {
			return nil, fmt.Errorf("oracle: advance of %s: no such partition", a.Source)
		}
		if a.Offset < 0 || a.Watermark.IsZero() {
			return nil, fmt.Errorf("oracle: advance of %s at offset %d to %v: want an offset >= 0 and a watermark",
				a.Source, a.Offset, a.Watermark)
		}
		out[a.Source] = append(out[a.Source], a)
	}
	for _, as := range out {
		slices.SortStableFunc(as, func(a, b Advance) int { return cmp.Compare(a.Offset, b.Offset) })
	}
	return out, nil
}

func mod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// Aggregates returns the rows delay_aggregates must hold when each partition's closed_through
// is as given: the merged rows of the complete windows, those that end at or before
// [Result.CompleteThrough]; partials of a key are merged in (topic, partition) order. A
// partition missing from closedThrough has closed nothing.
func (r *Result) Aggregates(closedThrough map[Source]time.Time) (map[AggKey]AggRow, error) {
	through, complete := r.CompleteThrough(closedThrough)
	sources := make([]Source, 0, len(r.partials))
	for s := range r.partials {
		sources = append(sources, s)
	}
	slices.SortFunc(sources, compareSources)

	type acc struct {
		row   AggRow
		sum   float64
		stats []*window.Stats
	}
	accs := map[AggKey]*acc{}
	for _, src := range sources {
		if !complete {
			break
		}
		for k, pa := range r.partials[src] {
			if pa.end.After(through) {
				continue
			}
			key := AggKey{WindowStart: time.Unix(0, k.start).UTC(), Dimension: k.dim, DimensionID: k.id}
			a := accs[key]
			if a == nil {
				a = &acc{row: AggRow{WindowEnd: pa.end, Operator: pa.operator, Min: pa.min, Max: pa.max}}
				accs[key] = a
			}
			if a.row.Operator == "" {
				a.row.Operator = pa.operator
			}
			a.row.Count += pa.count
			a.sum += pa.sum
			a.row.Min = math.Min(a.row.Min, pa.min)
			a.row.Max = math.Max(a.row.Max, pa.max)
			a.stats = append(a.stats, pa.stats) // sources are visited in (topic, partition) order
		}
	}
	out := make(map[AggKey]AggRow, len(accs))
	for k, a := range accs {
		merged, err := window.Merge(a.stats...)
		if err != nil {
			return nil, fmt.Errorf("oracle: merge %v: %w", k, err)
		}
		a.row.Mean = a.sum / float64(a.row.Count)
		a.row.P90 = merged.Quantile(spec.QuantileMethod, spec.Quantile)
		out[k] = a.row
	}
	return out, nil
}

// CompleteThrough returns the bound of the complete windows given each partition's
// closed_through: the minimum over the partitions of the predictions topic that have a
// watermark, which the processor registers and which hold windows back in the sink (a
// partition without one is marked empty and holds nothing back). ok is false when one of
// them has closed nothing, or when none has a watermark.
func (r *Result) CompleteThrough(closedThrough map[Source]time.Time) (time.Time, bool) {
	var low time.Time
	found := false
	for src := range r.ClosableThrough() {
		ct, ok := closedThrough[src]
		if !ok {
			return time.Time{}, false
		}
		if !found || ct.Before(low) {
			low, found = ct, true
		}
	}
	return low, found
}

// CommittedOffsets returns the offset each partition may be committed at when every record
// has been decided, state is flushed, dead letters are confirmed and each partition's
// closed_through is as given: one past the longest prefix of records that are durable, the
// first admitted prediction of a window not yet closed stopping it. The ledger must commit
// exactly this after a graceful shutdown; never more.
func (r *Result) CommittedOffsets(closedThrough map[Source]time.Time) map[Source]int64 {
	out := map[Source]int64{}
	for src, p := range r.Partitions {
		out[src] = p.Records
		ct, ok := closedThrough[src]
		for _, oe := range r.windowed[src] {
			if !ok || oe.end.After(ct) {
				out[src] = oe.offset
				break
			}
		}
	}
	return out
}

// ClosableThrough returns, per partition of the predictions topic, the watermark at the end
// of the records: what closed_through reaches when every record has been decided and no
// partition went idle other than by the configured advances.
func (r *Result) ClosableThrough() map[Source]time.Time {
	out := map[Source]time.Time{}
	for src, p := range r.Partitions {
		if src.Topic == r.cfg.PredictionsTopic && !p.Watermark.IsZero() {
			out[src] = p.Watermark
		}
	}
	return out
}

// LastCompleteWindow returns the start of the latest window that every prediction partition
// has closed, given their closed_through, and false if there is none.
func (r *Result) LastCompleteWindow(closedThrough map[Source]time.Time) (time.Time, bool) {
	var low time.Time
	first := true
	for src := range r.partials {
		ct, ok := closedThrough[src]
		if !ok {
			return time.Time{}, false
		}
		if first || ct.Before(low) {
			low, first = ct, false
		}
	}
	if first {
		return time.Time{}, false
	}
	start, _ := window.Bounds(low, r.cfg.WindowSize) // the window holding low is not closed
	return start.Add(-r.cfg.WindowSize), true
}
