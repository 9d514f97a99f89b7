package window

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rankError is how far, as a fraction of len(sorted), the estimate's rank lies from the
// exact q-quantile's rank: 0 if some rank of the estimate (it may span equal values)
// reaches the exact value's.
func rankError(sorted []float64, q, estimate float64) float64 {
	n := float64(len(sorted))
	exact := ExactQuantile(sorted, q)
	lo := func(v float64) float64 { return float64(sort.SearchFloat64s(sorted, v)) }
	hi := func(v float64) float64 {
		return float64(sort.Search(len(sorted), func(i int) bool { return sorted[i] > v }))
	}
	// Ranks are taken as intervals [#(x < v), #(x <= v)] so that duplicates count fairly.
	eLo, eHi := lo(estimate), hi(estimate)
	xLo, xHi := lo(exact), hi(exact)
	switch {
	case eHi < xLo:
		return (xLo - eHi) / n
	case eLo > xHi:
		return (eLo - xHi) / n
	}
	return 0
}

type distribution struct {
	name string
	gen  func(r *rand.Rand) float64
}

var distributions = []distribution{
	{"uniform", func(r *rand.Rand) float64 { return r.Float64() * 1000 }},
	{"normal", func(r *rand.Rand) float64 { return r.NormFloat64()*60 + 30 }},
	{"exponential delays", func(r *rand.Rand) float64 { return math.Round(r.ExpFloat64() * 90) }},
	{"lognormal", func(r *rand.Rand) float64 { return math.Exp(r.NormFloat64() * 2) }},
	{"bimodal", func(r *rand.Rand) float64 {
		if r.IntN(10) < 7 {
			return r.NormFloat64() * 5
		}
		return 600 + r.NormFloat64()*30
	}},
	{"few distinct", func(r *rand.Rand) float64 { return float64(r.IntN(7) * 60) }},
	{"heavy tail", func(r *rand.Rand) float64 { return 1 / (1 - r.Float64()) }},
}

// TestQuantileAccuracy checks the P90 rank error against the exact value over random
// windows of mixed sizes and distributions, for windows built by Add and for merges of
// several partials. The brief's bound is 1%.
func TestQuantileAccuracy(t *testing.T) {
	windows := 1000
	if testing.Short() || raceEnabled {
		windows = 200
	}
	r := rand.New(rand.NewPCG(2026, 90))
	var maxErr, maxMergedErr float64
	for w := range windows {
		d := distributions[w%len(distributions)]
		// Sizes log-uniform from 1 to about 60,000.
		n := int(math.Exp(r.Float64() * math.Log(60000)))
		parts := 1 + r.IntN(12)
		vals := make([]float64, n)
		ps := make([]*Stats, parts)
		for i := range ps {
			ps[i] = NewStats()
		}
		whole := NewStats()
		for i := range vals {
			v := d.gen(r)
			vals[i] = v
			require.NoError(t, whole.Add(v))
			require.NoError(t, ps[r.IntN(parts)].Add(v))
		}
		merged, err := Merge(ps...)
		require.NoError(t, err)
		s := sorted(vals)
		for _, q := range []float64{0.5, 0.9, 0.99} {
			e := rankError(s, q, whole.Quantile(q))
			me := rankError(s, q, merged.Quantile(q))
			if n <= ExactLimit {
				require.Equal(t, ExactQuantile(s, q), whole.Quantile(q), "exact mode is exact")
				require.Equal(t, ExactQuantile(s, q), merged.Quantile(q), "exact mode is exact")
			}
			require.LessOrEqual(t, e, 0.01, "%s n=%d q=%v", d.name, n, q)
			require.LessOrEqual(t, me, 0.01, "merged %s n=%d parts=%d q=%v", d.name, n, parts, q)
			if q == 0.9 && e > maxErr && testing.Verbose() {
				t.Logf("new max: %s n=%d err=%.4f%%", d.name, n, 100*e)
			}
			if q == 0.9 {
				maxErr = math.Max(maxErr, e)
				maxMergedErr = math.Max(maxMergedErr, me)
			}
		}
	}
	t.Logf("max P90 rank error over %d windows: %.4f%% (one Stats), %.4f%% (merged partials)",
		windows, 100*maxErr, 100*maxMergedErr)
	assert.LessOrEqual(t, maxErr, 0.01)
}
