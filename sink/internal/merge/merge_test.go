package merge_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/quantile"
	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/merge"
	"github.com/streamledger/streamledger/window"
)

var stats = sinkfixture.Stats

func TestMergeSummarizesAllValues(t *testing.T) {
	parts := [][]float64{{3, 1, 4}, {1, 5}, {9, 2, 6, 5}}
	var all []float64
	var enc [][]byte
	for _, p := range parts {
		all = append(all, p...)
		enc = append(enc, stats(t, p...))
	}
	slices.Sort(all)
	tests := []struct {
		name  string
		spec  sink.AggregateSpec
		parts [][]byte
		want  sink.Summary
	}{
		{"default: P90, linear", sink.AggregateSpec{}, enc,
			sink.Summary{Count: 9, Mean: 36.0 / 9, Quantile: quantile.Linear(all, 0.9), Max: 9, Min: 1}},
		{"nearest rank", sink.AggregateSpec{QuantileMethod: window.NearestRank}, enc,
			sink.Summary{Count: 9, Mean: 36.0 / 9, Quantile: 9, Max: 9, Min: 1}},
		{"median of one part", sink.AggregateSpec{Quantile: 0.5}, enc[:1],
			sink.Summary{Count: 3, Mean: 8.0 / 3, Quantile: 3, Max: 4, Min: 1}},
		{"nearest-rank median", sink.AggregateSpec{Quantile: 0.5, QuantileMethod: window.NearestRank}, enc,
			sink.Summary{Count: 9, Mean: 36.0 / 9, Quantile: 4, Max: 9, Min: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := merge.Partials(tt.spec, tt.parts...)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// Past the exact limit the quantile comes from digests; it must still be identical for
// the same parts in the same order.
func TestMergeIsDeterministicInDigestMode(t *testing.T) {
	var enc [][]byte
	for p := range 3 {
		vals := make([]float64, 700)
		for i := range vals {
			vals[i] = float64((i*37+p*11)%1000) / 3
		}
		enc = append(enc, stats(t, vals...))
	}
	a, err := merge.Partials(sink.AggregateSpec{}, enc...)
	require.NoError(t, err)
	b, err := merge.Partials(sink.AggregateSpec{}, enc...)
	require.NoError(t, err)
	assert.Equal(t, a, b)
	assert.Equal(t, int64(2100), a.Count)
}

// The spec's exact limit decides whether partials written with a larger limit merge
// exactly: the sink decodes them with it.
func TestMergeExactLimit(t *testing.T) {
	var enc [][]byte
	var all []float64
	for p := range 3 {
		s := window.NewStats()
		require.NoError(t, s.SetExactLimit(1000))
		for i := range 200 {
			v := float64((i*37 + p*11) % 1000)
			all = append(all, v)
			require.NoError(t, s.Add(v))
		}
		b, err := s.MarshalBinary()
		require.NoError(t, err)
		enc = append(enc, b)
	}
	slices.Sort(all)
	exact := quantile.NearestRank(all, 0.9)
	got, err := merge.Partials(sink.AggregateSpec{QuantileMethod: window.NearestRank, ExactLimit: 1000}, enc...)
	require.NoError(t, err)
	assert.Equal(t, exact, got.Quantile, "600 values within the limit of 1000")
	est, err := merge.Partials(sink.AggregateSpec{QuantileMethod: window.NearestRank}, enc...)
	require.NoError(t, err)
	assert.NotEqual(t, exact, est.Quantile, "600 values past the default limit: an estimate")
	_, err = merge.Partials(sink.AggregateSpec{ExactLimit: window.MaxExactLimit + 1}, enc...)
	assert.ErrorIs(t, err, sink.ErrInvalid)
}

// Summarize of stats decoded by the spec gives Merge's numbers, in exact and digest mode,
// also when a part was summarized alone first and then reused in a merge (as the fold does).
func TestSummarizeMatchesMerge(t *testing.T) {
	spec := sink.AggregateSpec{QuantileMethod: window.NearestRank}
	for _, n := range []int{5, 700} {
		var enc [][]byte
		var parts []*window.Stats
		for p := range 3 {
			vals := make([]float64, n)
			for i := range vals {
				vals[i] = float64((i*37+p*11)%1000) / 3
			}
			enc = append(enc, stats(t, vals...))
			s, err := merge.Decode(spec, enc[p])
			require.NoError(t, err)
			parts = append(parts, s)
		}
		alone, err := merge.Summarize(spec, parts[0])
		require.NoError(t, err)
		want, err := merge.Partials(spec, enc[0])
		require.NoError(t, err)
		assert.Equal(t, want, alone, "%d values", n)

		m, err := window.Merge(parts...)
		require.NoError(t, err)
		got, err := merge.Summarize(spec, m)
		require.NoError(t, err)
		want, err = merge.Partials(spec, enc...)
		require.NoError(t, err)
		assert.Equal(t, want, got, "%d values", n)
	}
	_, err := merge.Summarize(spec, window.NewStats())
	assert.ErrorIs(t, err, sink.ErrInvalid)
}

func TestMergeRejects(t *testing.T) {
	_, err := merge.Partials(sink.AggregateSpec{})
	assert.ErrorIs(t, err, sink.ErrInvalid)
	_, err = merge.Partials(sink.AggregateSpec{}, []byte("not stats"))
	assert.ErrorIs(t, err, sink.ErrInvalid)
	_, err = merge.Partials(sink.AggregateSpec{}, stats(t))
	assert.ErrorIs(t, err, sink.ErrInvalid, "no values at all")
}

func FuzzMerge(f *testing.F) {
	f.Add(stats(f, 1, 2, 3), stats(f, 4))
	f.Add([]byte{}, []byte{1})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		s, err := merge.Partials(sink.AggregateSpec{}, a, b)
		if err != nil {
			assert.ErrorIs(t, err, sink.ErrInvalid)
			return
		}
		assert.Positive(t, s.Count)
		assert.LessOrEqual(t, s.Min, s.Max)
	})
}

func TestCompareSources(t *testing.T) {
	a := sink.TopicPartition{Topic: "a", Partition: 9}
	b := sink.TopicPartition{Topic: "b", Partition: 0}
	assert.Negative(t, merge.CompareSources(a, b))
	assert.Positive(t, merge.CompareSources(sink.TopicPartition{Topic: "a", Partition: 10}, a))
	assert.Zero(t, merge.CompareSources(a, a))
}
