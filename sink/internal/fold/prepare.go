package fold

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/window"
)

// prepared is a batch as a call plans it: its source, closed_through and Empty (Partials
// nil), and its partials as entries, collapsed to the last one per key, in key order (window
// start, dimension, dimension id), so that every attempt's plan slices them instead of
// converting them again. Their stats are checked here, without decoding, and decoded where a
// plan merges them: holding a whole batch's decoded stats until the call ends would keep a
// second copy of every closed window alive through the write.
type prepared struct {
	sink.CloseBatch
	entries []Entry
	windows []span // the windows of entries, ascending
}

// span is one window of a prepared batch: its start and end, and its entries [lo, hi).
type span struct {
	start, end time.Time
	lo, hi     int
}

// prepare validates b against spec and returns it prepared: times at sink.Precision in UTC
// (sink.AtPrecision), partials collapsed and ordered. b is not modified. Errors wrap
// [sink.ErrInvalid].
func prepare(spec sink.AggregateSpec, b sink.CloseBatch) (prepared, error) {
	if b.Source.Topic == "" {
		return prepared{}, fmt.Errorf("%w: close batch without a source topic", sink.ErrInvalid)
	}
	if b.Source.Partition < 0 {
		return prepared{}, fmt.Errorf("%w: close batch for %s: partition must be >= 0", sink.ErrInvalid, b.Source)
	}
	attrs := make(map[string]bool, len(spec.Attributes))
	for _, a := range spec.Attributes {
		attrs[a] = true
	}
	out := prepared{CloseBatch: sink.CloseBatch{Source: b.Source, ClosedThrough: sink.AtPrecision(b.ClosedThrough), Empty: b.Empty}}
	order := sortedKeys(b.Partials)
	out.entries = make([]Entry, 0, len(order))
	na := len(spec.Attributes)
	var slots []*string // the entries' attribute slots, one backing array
	var values attrValues
	var check window.Stats // decodes every partial into the same storage, to check it
	if na > 0 {
		slots = make([]*string, len(order)*na)
	}
	for n, k := range order {
		i := int(k.i)
		p := b.Partials[i]
		p.WindowStart, p.WindowEnd = sink.AtPrecision(p.WindowStart), sink.AtPrecision(p.WindowEnd)
		if err := checkPartial(spec, attrs, out.ClosedThrough, b.Source, i, p); err != nil {
			return prepared{}, err
		}
		if n+1 < len(order) && order[n+1].compareKey(&k) == 0 {
			continue // a later partial of the same key replaces it
		}
		// Checked and dropped: a plan decodes again only the partials it merges.
		err := check.UnmarshalBinary(p.Stats)
		count := check.Count()
		if err != nil {
			return prepared{}, fmt.Errorf("partial %d of %s (%s/%s): %w: stats: %w",
				i, b.Source, p.Dimension, p.DimensionID, sink.ErrInvalid, err)
		}
		if count == 0 {
			return prepared{}, fmt.Errorf("%w: partial %d of %s (%s/%s) holds no value; a closed window yields partials only for keys that saw one",
				sink.ErrInvalid, i, b.Source, p.Dimension, p.DimensionID)
		}
		if k := len(out.windows); k == 0 || !out.windows[k-1].start.Equal(p.WindowStart) {
			out.windows = append(out.windows, span{start: p.WindowStart, end: p.WindowEnd, lo: len(out.entries)})
		} else if end := out.windows[k-1].end; !end.Equal(p.WindowEnd) {
			return prepared{}, fmt.Errorf("%w: partials of the window starting at %s end at %s and at %s", sink.ErrInvalid,
				p.WindowStart.Format(time.RFC3339), end.Format(time.RFC3339), p.WindowEnd.Format(time.RFC3339))
		}
		e := Entry{Dimension: p.Dimension, DimensionID: p.DimensionID, Stats: p.Stats}
		if na > 0 {
			e.Attrs, slots = slots[:na:na], slots[na:]
			for j, name := range spec.Attributes {
				if v, ok := p.Attrs[name]; ok {
					e.Attrs[j] = values.of(v)
				}
			}
		}
		out.entries = append(out.entries, e)
		out.windows[len(out.windows)-1].hi = len(out.entries)
	}
	return out, nil
}

// partialKey is a partial's key and position, laid out for sorting: the sort reads the
// keys from one array rather than from the partials, and compares each string once.
type partialKey struct {
	sec     int64 // the window start as merge.CompareKeys orders it: Unix seconds,
	nsec    int32 // then nanoseconds
	i       int32 // the partial's position
	dim, id string
}

// sortedKeys returns the keys of ps ordered by key (merge.CompareKeys), then position, so that
// the partials of one key are next to each other in the order given: the last of each run is
// the one kept. (A total order sorts as a stable sort by key would, without its cost.)
func sortedKeys(ps []sink.Partial) []partialKey {
	keys := make([]partialKey, len(ps))
	for i, p := range ps {
		keys[i] = partialKey{sec: p.WindowStart.Unix(), nsec: int32(p.WindowStart.Nanosecond()), i: int32(i),
			dim: p.Dimension, id: p.DimensionID}
	}
	slices.SortFunc(keys, func(a, b partialKey) int {
		if c := a.compareKey(&b); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	})
	return keys
}

// compareKey orders a and b as merge.CompareKeys orders their partials' keys.
func (a *partialKey) compareKey(b *partialKey) int {
	switch {
	case a.sec != b.sec:
		return cmp.Compare(a.sec, b.sec)
	case a.nsec != b.nsec:
		return cmp.Compare(a.nsec, b.nsec)
	}
	if c := strings.Compare(a.dim, b.dim); c != 0 {
		return c
	}
	return strings.Compare(a.id, b.id)
}

// batch returns the prepared batch as a sink.CloseBatch, with its partials.
func (p *prepared) batch(spec sink.AggregateSpec) sink.CloseBatch {
	b := p.CloseBatch
	if len(p.entries) == 0 {
		return b
	}
	b.Partials = make([]sink.Partial, 0, len(p.entries))
	for _, w := range p.windows {
		for _, e := range p.entries[w.lo:w.hi] {
			pa := sink.Partial{Key: sink.Key{WindowStart: w.start, Dimension: e.Dimension, DimensionID: e.DimensionID},
				WindowEnd: w.end, Stats: e.Stats}
			for j, a := range e.Attrs {
				if a != nil {
					if pa.Attrs == nil {
						pa.Attrs = make(map[string]string, len(spec.Attributes))
					}
					pa.Attrs[spec.Attributes[j]] = *a
				}
			}
			b.Partials = append(b.Partials, pa)
		}
	}
	return b
}

// checkPartial checks partial i of source's batch: its window, its end against the batch's
// closed_through, and its attributes against the spec's (attrs).
func checkPartial(spec sink.AggregateSpec, attrs map[string]bool, closedThrough time.Time, source sink.TopicPartition, i int, p sink.Partial) error {
	if !p.WindowEnd.After(p.WindowStart) {
		return fmt.Errorf("%w: partial %d of %s: window end %s must be after start %s",
			sink.ErrInvalid, i, source, p.WindowEnd.Format(time.RFC3339Nano), p.WindowStart.Format(time.RFC3339Nano))
	}
	if p.WindowEnd.After(closedThrough) {
		return fmt.Errorf("%w: partial %d of %s ends at %s, after the batch's closed_through %s",
			sink.ErrInvalid, i, source, p.WindowEnd.Format(time.RFC3339Nano), closedThrough.Format(time.RFC3339Nano))
	}
	for name := range p.Attrs {
		if !attrs[name] {
			return fmt.Errorf("%w: partial %d of %s carries attribute %q; the spec declares %q",
				sink.ErrInvalid, i, source, name, spec.Attributes)
		}
	}
	return nil
}

// attrValues hands out the entries' attribute values, one pointer per distinct value up to
// maxSharedValues of them: attributes are few values over many keys (a region over its
// devices), so sharing saves a small allocation per entry. The values are never written
// through.
type attrValues map[string]*string

const maxSharedValues = 1024

func (m *attrValues) of(v string) *string {
	if p, ok := (*m)[v]; ok {
		return p
	}
	p := &v
	if *m == nil {
		*m = make(attrValues)
	}
	if len(*m) < maxSharedValues {
		(*m)[v] = p
	}
	return p
}
