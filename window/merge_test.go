package window

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMerge(t *testing.T) {
	tests := []struct {
		name  string
		parts [][]float64
	}{
		{"no parts", nil},
		{"empty parts", [][]float64{{}, {}}},
		{"one part", [][]float64{{3, 1, 2}}},
		{"one non-empty", [][]float64{{}, {3, 1, 2}, {}}},
		{"exact result", [][]float64{{1, 2}, {3}, {4, 5, 6}}},
		{"exact parts, digest result", [][]float64{seq(0, 200), seq(200, 400)}},
		{"digest parts", [][]float64{seq(0, 5000), seq(5000, 12000), seq(-50, 50)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var parts []*Stats
			var all []float64
			for _, p := range tt.parts {
				parts = append(parts, statsOf(t, p...))
				all = append(all, p...)
			}
			m, err := Merge(parts...)
			require.NoError(t, err)
			require.Equal(t, int64(len(all)), m.Count())
			if len(all) == 0 {
				assert.True(t, math.IsNaN(m.Mean()))
				return
			}
			all = sorted(all)
			assert.Equal(t, all[0], m.Min())
			assert.Equal(t, all[len(all)-1], m.Max())
			var sum float64
			for _, p := range tt.parts {
				for _, v := range p {
					sum += v
				}
			}
			assert.InDelta(t, sum, m.Sum(), 1e-9*math.Abs(sum)+1e-9)
			assert.Equal(t, len(all) <= DefaultExactLimit, m.Exact())
			got := m.Quantile(Linear, 0.9)
			if m.Exact() {
				assert.Equal(t, Linear.exact(all, 0.9), got)
			} else {
				assert.LessOrEqual(t, between(all, Linear.exact(all, 0.9), got), len(all)/100)
			}
		})
	}
}

func seq(from, to int) []float64 {
	out := make([]float64, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, float64(i))
	}
	return out
}

func TestMergeNilPart(t *testing.T) {
	_, err := Merge(NewStats(), nil)
	require.Error(t, err)
}

func TestMergeOfOneIsCopy(t *testing.T) {
	s := statsOf(t, seq(0, 3000)...)
	m, err := Merge(NewStats(), s)
	require.NoError(t, err)
	want, err := s.MarshalBinary()
	require.NoError(t, err)
	got, err := m.MarshalBinary()
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

// TestMergeDeterministic merges the partials of 12 partitions in memory and after a
// round trip through bytes: the same order must give identical bytes every time, and any
// order the same quantiles.
func TestMergeDeterministic(t *testing.T) {
	build := func() []*Stats {
		r := rand.New(rand.NewPCG(11, 12))
		parts := make([]*Stats, 12)
		for i := range parts {
			parts[i] = NewStats()
			n := []int{0, 3, 100, 257, 900, 5000}[i%6]
			for range n {
				require.NoError(t, parts[i].Add(math.Round(r.NormFloat64()*120+float64(i)*10)))
			}
		}
		return parts
	}
	encode := func(s *Stats) []byte {
		b, err := s.MarshalBinary()
		require.NoError(t, err)
		return b
	}
	decoded := func(parts []*Stats) []*Stats {
		out := make([]*Stats, len(parts))
		for i, p := range parts {
			out[i] = NewStats()
			require.NoError(t, out[i].UnmarshalBinary(encode(p)))
		}
		return out
	}
	first, err := Merge(build()...)
	require.NoError(t, err)
	want := encode(first)
	for range 3 {
		m, err := Merge(build()...)
		require.NoError(t, err)
		assert.Equal(t, want, encode(m))
		m, err = Merge(decoded(build())...)
		require.NoError(t, err)
		assert.Equal(t, want, encode(m), "merging decoded partials must give the same bytes")
	}
	rev := build()
	slices.Reverse(rev)
	m, err := Merge(rev...)
	require.NoError(t, err)
	for _, q := range []float64{0.1, 0.5, 0.9, 0.99} {
		assert.Equal(t, first.Quantile(Linear, q), m.Quantile(Linear, q), "q=%v", q)
	}
}

// Exact parts merge to the same values whether they are sealed (their values ascending,
// merged in one pass) or not (sorted), and whatever their number.
func TestMergeExactSealedOrNot(t *testing.T) {
	for _, k := range []int{2, 3, 6, 8, 9, 12} {
		t.Run(fmt.Sprint(k, " parts"), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(k), 5))
			raw, sealed := make([]*Stats, k), make([]*Stats, k)
			var all []float64
			for i := range k {
				raw[i] = NewStats()
				for range r.IntN(20) { // some parts empty
					v := float64(r.IntN(15)) + []float64{0, 0.5}[i%2]
					require.NoError(t, raw[i].Add(v))
					all = append(all, v)
				}
				b, err := raw[i].MarshalBinary() // seals raw[i] too: rebuild it below
				require.NoError(t, err)
				sealed[i] = NewStats()
				require.NoError(t, sealed[i].UnmarshalBinary(b))
			}
			for i := range raw { // unsorted: the values in the order added
				vals := slices.Clone(sealed[i].vals)
				r.Shuffle(len(vals), func(a, b int) { vals[a], vals[b] = vals[b], vals[a] })
				raw[i] = NewStats()
				for _, v := range vals {
					require.NoError(t, raw[i].Add(v))
				}
			}
			slices.Sort(all)
			for name, parts := range map[string][]*Stats{"sealed": sealed, "unsorted": raw} {
				m, err := Merge(parts...)
				require.NoError(t, err)
				if len(all) == 0 {
					assert.Zero(t, m.Count(), name)
					continue
				}
				assert.Equal(t, all, m.vals, name)
			}
		})
	}
}
