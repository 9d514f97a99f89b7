package sink

import (
	"fmt"

	"github.com/streamledger/streamledger/window"
)

// Merge decodes the serialized window.Stats in parts, merges them with window.Merge in the
// given order and summarizes the result: count, min and max exact, Mean = sum / count, and
// the q-quantile. Callers pass the parts of one key in (topic, partition) order (see
// [CompareSources]), so that every writer and every implementation computes identical
// numbers from the same stored partials.
func Merge(q float64, parts ...[]byte) (Summary, error) {
	if len(parts) == 0 {
		return Summary{}, fmt.Errorf("%w: merge of no partials", ErrInvalid)
	}
	stats := make([]*window.Stats, len(parts))
	for i, p := range parts {
		s := new(window.Stats)
		if err := s.UnmarshalBinary(p); err != nil {
			return Summary{}, fmt.Errorf("%w: partial %d of %d: %w", ErrInvalid, i, len(parts), err)
		}
		stats[i] = s
	}
	return MergeStats(q, stats...)
}

// MergeStats is [Merge] for decoded parts: an implementation that decodes partials ahead of
// time (while the database works) gets the same numbers as Merge of the serialized parts in
// the same order. The parts keep the values they hold (they may be sealed, which does not
// change any result), so a part may take part in several merges.
func MergeStats(q float64, parts ...*window.Stats) (Summary, error) {
	if len(parts) == 0 {
		return Summary{}, fmt.Errorf("%w: merge of no partials", ErrInvalid)
	}
	m := parts[0]
	if len(parts) > 1 {
		var err error
		if m, err = window.Merge(parts...); err != nil {
			return Summary{}, fmt.Errorf("sink: merge: %w", err)
		}
	}
	n := m.Count()
	if n == 0 {
		return Summary{}, fmt.Errorf("%w: merged partials hold no value", ErrInvalid)
	}
	return Summary{
		Count:    n,
		Mean:     m.Sum() / float64(n),
		Quantile: m.Quantile(q),
		Max:      m.Max(),
		Min:      m.Min(),
	}, nil
}
