package fold

import (
	"fmt"
	"slices"
	"time"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/window"
)

// prepare validates b against spec and returns the batch an implementation writes: times at
// sink.Precision in UTC (sink.AtPrecision), partials collapsed to the last one per key, ordered by key (window start, dimension,
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
	out := sink.CloseBatch{Source: b.Source, ClosedThrough: sink.AtPrecision(b.ClosedThrough)}
	// Sorting the positions by key, stably, puts the partials of one key next to each other in
	// the order given: the last of each run is the one kept.
	order := make([]int, len(b.Partials))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return sink.CompareKeys(b.Partials[i].Key, b.Partials[j].Key) })
	out.Partials = make([]sink.Partial, 0, len(order))
	stats := make([]*window.Stats, 0, len(order))
	for n, i := range order {
		p := b.Partials[i]
		p.WindowStart, p.WindowEnd = sink.AtPrecision(p.WindowStart), sink.AtPrecision(p.WindowEnd)
		if err := checkPartial(spec, attrs, out.ClosedThrough, b.Source, i, p); err != nil {
			return sink.CloseBatch{}, nil, err
		}
		if n+1 < len(order) && sink.CompareKeys(b.Partials[order[n+1]].Key, b.Partials[i].Key) == 0 {
			continue // a later partial of the same key replaces it
		}
		st, err := spec.Decode(p.Stats)
		if err != nil {
			return sink.CloseBatch{}, nil, fmt.Errorf("partial %d of %s (%s/%s): %w", i, b.Source, p.Dimension, p.DimensionID, err)
		}
		if st.Count() == 0 {
			return sink.CloseBatch{}, nil, fmt.Errorf("%w: partial %d of %s (%s/%s) holds no value; a closed window yields partials only for keys that saw one",
				sink.ErrInvalid, i, b.Source, p.Dimension, p.DimensionID)
		}
		out.Partials = append(out.Partials, p)
		stats = append(stats, st)
	}
	return out, stats, nil
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
