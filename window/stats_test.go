package window

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func statsOf(t testing.TB, vals ...float64) *Stats {
	t.Helper()
	s := NewStats()
	for _, v := range vals {
		require.NoError(t, s.Add(v))
	}
	return s
}

func TestStatsBasics(t *testing.T) {
	tests := []struct {
		name                     string
		vals                     []float64
		count                    int64
		sum, mean, min, max, p90 float64
	}{
		{name: "one", vals: []float64{7}, count: 1, sum: 7, mean: 7, min: 7, max: 7, p90: 7},
		{name: "two", vals: []float64{10, 0}, count: 2, sum: 10, mean: 5, min: 0, max: 10, p90: 9},
		{name: "ten", vals: []float64{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}, count: 10, sum: 55, mean: 5.5, min: 1, max: 10, p90: 9.1},
		{name: "negative", vals: []float64{-3, -1, -2}, count: 3, sum: -6, mean: -2, min: -3, max: -1, p90: -1.2},
		{name: "duplicates", vals: []float64{2, 2, 2, 2}, count: 4, sum: 8, mean: 2, min: 2, max: 2, p90: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := statsOf(t, tt.vals...)
			assert.Equal(t, tt.count, s.Count())
			assert.Equal(t, tt.sum, s.Sum())
			assert.Equal(t, tt.mean, s.Mean())
			assert.Equal(t, tt.min, s.Min())
			assert.Equal(t, tt.max, s.Max())
			assert.InDelta(t, tt.p90, s.Quantile(Linear, 0.9), 1e-12)
			assert.Equal(t, tt.min, s.Quantile(Linear, 0))
			assert.Equal(t, tt.max, s.Quantile(Linear, 1))
			assert.True(t, s.Exact())
		})
	}
}

func TestStatsEmptyAndInvalid(t *testing.T) {
	var s Stats
	assert.Zero(t, s.Count())
	assert.True(t, math.IsNaN(s.Mean()))
	assert.True(t, math.IsNaN(s.Min()))
	assert.True(t, math.IsNaN(s.Max()))
	assert.True(t, math.IsNaN(s.Quantile(Linear, 0.5)))

	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 2 * MaxValue, -2 * MaxValue} {
		err := s.Add(v)
		require.ErrorIs(t, err, ErrInvalidValue, "value %v", v)
	}
	assert.Zero(t, s.Count(), "rejected values must not be added")

	require.NoError(t, s.Add(1))
	for _, q := range []float64{-0.1, 1.1, math.NaN()} {
		assert.True(t, math.IsNaN(s.Quantile(Linear, q)), "q=%v", q)
	}
}

func TestStatsNegativeZero(t *testing.T) {
	a := statsOf(t, math.Copysign(0, -1), 1)
	b := statsOf(t, 0, 1)
	assert.False(t, math.Signbit(a.Min()))
	ab, err := a.MarshalBinary()
	require.NoError(t, err)
	bb, err := b.MarshalBinary()
	require.NoError(t, err)
	assert.Equal(t, bb, ab)
}

func TestExactQuantile(t *testing.T) {
	tests := []struct {
		vals []float64
		q    float64
		want float64
	}{
		{[]float64{1}, 0.9, 1},
		{[]float64{1, 2}, 0.5, 1.5},
		{[]float64{1, 2, 3, 4, 5}, 0.9, 4.6},
		{[]float64{1, 2, 3, 4, 5}, 0.75, 4},
		{[]float64{0, 10}, 0.25, 2.5},
		{[]float64{1, 2, 3}, 1, 3},
		{[]float64{1, 2, 3}, 0, 1},
	}
	for _, tt := range tests {
		assert.InDelta(t, tt.want, Linear.exact(tt.vals, tt.q), 1e-12, "%v q=%v", tt.vals, tt.q)
	}
	assert.True(t, math.IsNaN(Linear.exact(nil, 0.5)))
	assert.True(t, math.IsNaN(Linear.exact([]float64{1}, 2)))
}

func TestStatsSwitchesToDigest(t *testing.T) {
	s := NewStats()
	for i := range DefaultExactLimit {
		require.NoError(t, s.Add(float64(i)))
	}
	assert.True(t, s.Exact(), "exact up to DefaultExactLimit values")
	require.NoError(t, s.Add(DefaultExactLimit))
	assert.False(t, s.Exact(), "digest past DefaultExactLimit values")
	for i := DefaultExactLimit + 1; i < 10000; i++ {
		require.NoError(t, s.Add(float64(i)))
	}
	assert.Equal(t, int64(10000), s.Count())
	assert.Equal(t, float64(0), s.Min())
	assert.Equal(t, float64(9999), s.Max())
	assert.Equal(t, float64(9999*10000/2), s.Sum())
	assert.InDelta(t, 8999.1, s.Quantile(Linear, 0.9), 10000*0.01)
	assert.InDelta(t, 4999.5, s.Quantile(Linear, 0.5), 10000*0.01)
}

func TestStatsQuantileReadDoesNotChangeAggregates(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	s := NewStats()
	for range 5000 {
		require.NoError(t, s.Add(r.NormFloat64()))
	}
	count, sum, lo, hi := s.Count(), s.Sum(), s.Min(), s.Max()
	p := s.Quantile(Linear, 0.9)
	assert.Equal(t, p, s.Quantile(Linear, 0.9))
	assert.Equal(t, []any{count, sum, lo, hi}, []any{s.Count(), s.Sum(), s.Min(), s.Max()})
}

func TestStatsCloneIsDeep(t *testing.T) {
	for _, n := range []int{3, 3000} {
		s := NewStats()
		for i := range n {
			require.NoError(t, s.Add(float64(i)))
		}
		c := s.Clone()
		want, err := s.MarshalBinary()
		require.NoError(t, err)
		for i := range n {
			require.NoError(t, c.Add(float64(-i)))
		}
		got, err := s.MarshalBinary()
		require.NoError(t, err)
		assert.Equal(t, want, got, "n=%d: adding to a clone changed the original", n)
	}
}

func TestStatsDeterministic(t *testing.T) {
	build := func() []byte {
		r := rand.New(rand.NewPCG(7, 7))
		s := NewStats()
		for range 20000 {
			require.NoError(t, s.Add(math.Round(r.ExpFloat64()*600)))
		}
		b, err := s.MarshalBinary()
		require.NoError(t, err)
		return b
	}
	assert.Equal(t, build(), build())
}

func sorted(v []float64) []float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v
}
