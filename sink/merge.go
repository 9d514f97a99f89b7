package sink

import (
	"cmp"
	"fmt"

	"github.com/streamledger/streamledger/window"
)

// SummarizePartials computes the merged row of one key from its partials, the serialized
// window.Stats in parts: each decoded with the spec's exact limit ([AggregateSpec.Decode]),
// merged with window.Merge in the given order and summarized by [AggregateSpec.Summarize].
// Callers pass the parts of one key in (topic, partition) order (see [CompareSources]), so
// that every writer and every implementation computes identical numbers from the same
// stored partials.
func (spec AggregateSpec) SummarizePartials(parts ...[]byte) (Summary, error) {
	if len(parts) == 0 {
		return Summary{}, fmt.Errorf("%w: merge of no partials", ErrInvalid)
	}
	stats := make([]*window.Stats, len(parts))
	for i, p := range parts {
		s, err := spec.Decode(p)
		if err != nil {
			return Summary{}, fmt.Errorf("partial %d of %d: %w", i, len(parts), err)
		}
		stats[i] = s
	}
	m, err := window.Merge(stats...)
	if err != nil {
		return Summary{}, fmt.Errorf("sink: merge: %w", err)
	}
	return spec.Summarize(m)
}

// Decode decodes a serialized window.Stats (a partial, or merged stats an implementation
// stored) with the spec's exact limit, so that merging it follows the spec. Errors wrap
// [ErrInvalid].
func (s AggregateSpec) Decode(b []byte) (*window.Stats, error) {
	st := new(window.Stats)
	if err := st.SetExactLimit(s.ExactLimit); err != nil {
		return nil, fmt.Errorf("%w: AggregateSpec.ExactLimit: %w", ErrInvalid, err)
	}
	if err := st.UnmarshalBinary(b); err != nil {
		return nil, fmt.Errorf("%w: stats: %w", ErrInvalid, err)
	}
	return st, nil
}

// Summarize returns the merged row's numbers for the merged stats of one key: count, min
// and max exact, Mean = sum / count, and the spec's quantile by its method (a zero Quantile
// is [DefaultQuantile]). It is how every implementation computes a merged row, so that all
// of them store the same numbers. m must hold at least one value.
func (s AggregateSpec) Summarize(m *window.Stats) (Summary, error) {
	n := m.Count()
	if n == 0 {
		return Summary{}, fmt.Errorf("%w: merged partials hold no value", ErrInvalid)
	}
	return Summary{
		Count:    n,
		Mean:     m.Sum() / float64(n),
		Quantile: m.Quantile(s.QuantileMethod, cmp.Or(s.Quantile, DefaultQuantile)),
		Max:      m.Max(),
		Min:      m.Min(),
	}, nil
}
