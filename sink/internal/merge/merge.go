// Package merge computes a merged row the way every sink does: the partials of one key
// decoded with the aggregate spec's exact limit, merged with window.Merge in (topic,
// partition) order and summarized by the spec's quantile and method, so that every writer and
// every implementation stores identical numbers for the same partials. It also holds the
// orders of keys and sources that the sinks merge and return rows in.
package merge

import (
	"cmp"
	"fmt"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/specs"
	"github.com/streamledger/streamledger/window"
)

// Partials computes the merged row of one key from its partials, the serialized
// window.Stats in parts: each decoded with the spec's exact limit ([Decode]), merged with
// window.Merge in the given order and summarized by [Summarize]. Callers pass the parts of
// one key in (topic, partition) order ([CompareSources]), so that every writer and every
// implementation computes identical numbers from the same stored partials.
func Partials(spec sink.AggregateSpec, parts ...[]byte) (sink.Summary, error) {
	if len(parts) == 0 {
		return sink.Summary{}, fmt.Errorf("%w: merge of no partials", sink.ErrInvalid)
	}
	stats := make([]*window.Stats, len(parts))
	for i, p := range parts {
		s, err := Decode(spec, p)
		if err != nil {
			return sink.Summary{}, fmt.Errorf("partial %d of %d: %w", i, len(parts), err)
		}
		stats[i] = s
	}
	m, err := window.Merge(stats...)
	if err != nil {
		return sink.Summary{}, fmt.Errorf("sink: merge: %w", err)
	}
	return Summarize(spec, m)
}

// Decode decodes a serialized window.Stats (a partial, or merged stats an implementation
// stored) with the spec's exact limit, so that merging it follows the spec. Errors wrap
// sink.ErrInvalid.
func Decode(spec sink.AggregateSpec, b []byte) (*window.Stats, error) {
	st := new(window.Stats)
	if err := st.SetExactLimit(spec.ExactLimit); err != nil {
		return nil, fmt.Errorf("%w: AggregateSpec.ExactLimit: %w", sink.ErrInvalid, err)
	}
	if err := st.UnmarshalBinary(b); err != nil {
		return nil, fmt.Errorf("%w: stats: %w", sink.ErrInvalid, err)
	}
	return st, nil
}

// Summarize returns the merged row's numbers for the merged stats of one key: count, min
// and max exact, Mean = sum / count, and the spec's quantile by its method (a zero Quantile
// is specs.DefaultQuantile). m must hold at least one value.
func Summarize(spec sink.AggregateSpec, m *window.Stats) (sink.Summary, error) {
	n := m.Count()
	if n == 0 {
		return sink.Summary{}, fmt.Errorf("%w: merged partials hold no value", sink.ErrInvalid)
	}
	return sink.Summary{
		Count:    n,
		Mean:     m.Sum() / float64(n),
		Quantile: m.Quantile(spec.QuantileMethod, cmp.Or(spec.Quantile, specs.DefaultQuantile)),
		Max:      m.Max(),
		Min:      m.Min(),
	}, nil
}

// CompareKeys orders keys by window start, dimension, then dimension id: the order of the
// rows a reader returns and of the keys a sink merges.
func CompareKeys(a, b sink.Key) int {
	if c := a.WindowStart.Compare(b.WindowStart); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Dimension, b.Dimension); c != 0 {
		return c
	}
	return cmp.Compare(a.DimensionID, b.DimensionID)
}

// CompareSources orders partitions by topic, then partition: the order in which partials
// are merged.
func CompareSources(a, b sink.TopicPartition) int {
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}
