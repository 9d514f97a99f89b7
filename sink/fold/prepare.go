package fold

import (
	"fmt"
	"slices"
	"time"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/window"
)

// prepare validates b against spec and returns the batch an implementation writes: times in
// UTC, partials collapsed to the last one per key, ordered by key (window start, dimension,
// dimension id), with each partial's stats decoded (in the same order), so that a fold merges
// them without decoding them again. b is not modified. Errors wrap [sink.ErrInvalid].
func prepare(spec sink.AggregateSpec, b sink.CloseBatch) (sink.CloseBatch, []*window.Stats, error) {
	if b.Source.Topic == "" {
		return sink.CloseBatch{}, nil, fmt.Errorf("%w: close batch without a source topic", sink.ErrInvalid)
	}
	if b.Source.Partition < 0 {
		return sink.CloseBatch{}, nil, fmt.Errorf("%w: close batch for %s: partition must be >= 0", sink.ErrInvalid, b.Source)
	}
	attrs := make(map[string]bool, len(spec.Attributes))
	for _, a := range spec.Attributes {
		attrs[a] = true
	}
	out := sink.CloseBatch{Source: b.Source, ClosedThrough: b.ClosedThrough.UTC()}
	index := make(map[sink.Key]int, len(b.Partials))
	out.Partials = make([]sink.Partial, 0, len(b.Partials))
	decoded := make([]*window.Stats, 0, len(b.Partials))
	for i, p := range b.Partials {
		p.WindowStart = p.WindowStart.UTC()
		p.WindowEnd = p.WindowEnd.UTC()
		if !p.WindowEnd.After(p.WindowStart) {
			return sink.CloseBatch{}, nil, fmt.Errorf("%w: partial %d of %s: window end %s must be after start %s",
				sink.ErrInvalid, i, b.Source, p.WindowEnd.Format(time.RFC3339Nano), p.WindowStart.Format(time.RFC3339Nano))
		}
		if p.WindowEnd.After(out.ClosedThrough) {
			return sink.CloseBatch{}, nil, fmt.Errorf("%w: partial %d of %s ends at %s, after the batch's closed_through %s",
				sink.ErrInvalid, i, b.Source, p.WindowEnd.Format(time.RFC3339Nano), out.ClosedThrough.Format(time.RFC3339Nano))
		}
		st, err := spec.Decode(p.Stats)
		if err != nil {
			return sink.CloseBatch{}, nil, fmt.Errorf("partial %d of %s (%s/%s): %w", i, b.Source, p.Dimension, p.DimensionID, err)
		}
		if st.Count() == 0 {
			return sink.CloseBatch{}, nil, fmt.Errorf("%w: partial %d of %s (%s/%s) holds no value; a closed window yields partials only for keys that saw one",
				sink.ErrInvalid, i, b.Source, p.Dimension, p.DimensionID)
		}
		for name := range p.Attrs {
			if !attrs[name] {
				return sink.CloseBatch{}, nil, fmt.Errorf("%w: partial %d of %s carries attribute %q; the spec declares %q",
					sink.ErrInvalid, i, b.Source, name, spec.Attributes)
			}
		}
		if j, ok := index[p.Key]; ok {
			out.Partials[j], decoded[j] = p, st
			continue
		}
		index[p.Key] = len(out.Partials)
		out.Partials = append(out.Partials, p)
		decoded = append(decoded, st)
	}
	order := make([]int, len(out.Partials))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int { return sink.CompareKeys(out.Partials[i].Key, out.Partials[j].Key) })
	partials, stats := make([]sink.Partial, len(order)), make([]*window.Stats, len(order))
	for i, j := range order {
		partials[i], stats[i] = out.Partials[j], decoded[j]
	}
	out.Partials = partials
	return out, stats, nil
}
