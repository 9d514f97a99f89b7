package sink_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/window"
)

func TestMergeSummarizesAllValues(t *testing.T) {
	parts := [][]float64{{3, 1, 4}, {1, 5}, {9, 2, 6, 5}}
	var all []float64
	var enc [][]byte
	for _, p := range parts {
		all = append(all, p...)
		enc = append(enc, stats(t, p...))
	}
	slices.Sort(all)
	got, err := sink.Merge(0.9, enc...)
	require.NoError(t, err)
	assert.Equal(t, sink.Summary{Count: 9, Mean: 36.0 / 9, Quantile: window.ExactQuantile(all, 0.9), Max: 9, Min: 1}, got)

	one, err := sink.Merge(0.5, enc[0])
	require.NoError(t, err)
	assert.Equal(t, sink.Summary{Count: 3, Mean: 8.0 / 3, Quantile: 3, Max: 4, Min: 1}, one)
}

// Past window.ExactLimit the quantile comes from digests; it must still be identical for
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
	a, err := sink.Merge(0.9, enc...)
	require.NoError(t, err)
	b, err := sink.Merge(0.9, enc...)
	require.NoError(t, err)
	assert.Equal(t, a, b)
	assert.Equal(t, int64(2100), a.Count)
}

// MergeStats of decoded parts gives Merge's numbers, in exact and digest mode, also when a
// part was summarized alone first and then reused in a merge (as the Postgres sink does).
func TestMergeStatsMatchesMerge(t *testing.T) {
	for _, n := range []int{5, 700} {
		var enc [][]byte
		var parts []*window.Stats
		for p := range 3 {
			vals := make([]float64, n)
			for i := range vals {
				vals[i] = float64((i*37+p*11)%1000) / 3
			}
			enc = append(enc, stats(t, vals...))
			s := new(window.Stats)
			require.NoError(t, s.UnmarshalBinary(enc[p]))
			parts = append(parts, s)
		}
		alone, err := sink.MergeStats(0.9, parts[0])
		require.NoError(t, err)
		want, err := sink.Merge(0.9, enc[0])
		require.NoError(t, err)
		assert.Equal(t, want, alone, "%d values", n)

		got, err := sink.MergeStats(0.9, parts...)
		require.NoError(t, err)
		want, err = sink.Merge(0.9, enc...)
		require.NoError(t, err)
		assert.Equal(t, want, got, "%d values", n)
	}
	_, err := sink.MergeStats(0.9)
	assert.ErrorIs(t, err, sink.ErrInvalid)
}

func TestMergeRejects(t *testing.T) {
	_, err := sink.Merge(0.9)
	assert.ErrorIs(t, err, sink.ErrInvalid)
	_, err = sink.Merge(0.9, []byte("not stats"))
	assert.ErrorIs(t, err, sink.ErrInvalid)
	_, err = sink.Merge(0.9, stats(t))
	assert.ErrorIs(t, err, sink.ErrInvalid, "no values at all")
}

func FuzzMerge(f *testing.F) {
	f.Add(stats(f, 1, 2, 3), stats(f, 4))
	f.Add([]byte{}, []byte{1})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		s, err := sink.Merge(0.9, a, b)
		if err != nil {
			assert.ErrorIs(t, err, sink.ErrInvalid)
			return
		}
		assert.Positive(t, s.Count)
		assert.LessOrEqual(t, s.Min, s.Max)
	})
}
