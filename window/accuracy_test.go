package window

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// between returns how many of the sorted values lie strictly between a and b: the rank
// distance of two numbers that does not depend on how ties are counted. Ranks are taken as
// intervals [#(x < v), #(x <= v)], so that an estimate within float32 rounding of a value
// repeated thousands of times is as good as the value itself.
func between(sorted []float64, a, b float64) int {
	if a > b {
		a, b = b, a
	}
	above := sort.Search(len(sorted), func(i int) bool { return sorted[i] > a })
	below := sort.SearchFloat64s(sorted, b)
	return max(0, below-above)
}

// rankOffset returns |rank(v)/n - q|, the distance from q to v's rank interval
// [#(x < v), #(x <= v)]/n: how far v is from being a q-quantile of the values at all.
func rankOffset(sorted []float64, q, v float64) float64 {
	n := float64(len(sorted))
	lo := float64(sort.SearchFloat64s(sorted, v)) / n
	hi := float64(sort.Search(len(sorted), func(i int) bool { return sorted[i] > v })) / n
	return math.Max(0, math.Max(lo-q, q-hi))
}

type distribution struct {
	name string
	// ties marks a distribution of few distinct values, where an estimate off by float32
	// rounding of one of them has a rank far from q, and rankOffset says nothing.
	ties bool
	gen  func(r *rand.Rand) float64
}

var distributions = []distribution{
	{"uniform", false, func(r *rand.Rand) float64 { return r.Float64() * 1000 }},
	{"normal", false, func(r *rand.Rand) float64 { return r.NormFloat64()*60 + 30 }},
	{"exponential delays", false, func(r *rand.Rand) float64 { return math.Round(r.ExpFloat64() * 90) }},
	{"lognormal", false, func(r *rand.Rand) float64 { return math.Exp(r.NormFloat64() * 2) }},
	{"bimodal", false, func(r *rand.Rand) float64 {
		if r.IntN(10) < 7 {
			return r.NormFloat64() * 5
		}
		return 600 + r.NormFloat64()*30
	}},
	{"few distinct", true, func(r *rand.Rand) float64 { return float64(r.IntN(7) * 60) }},
	{"heavy tail", false, func(r *rand.Rand) float64 { return 1 / (1 - r.Float64()) }},
}

// TestQuantileAccuracy enforces the digest's error bound stated in the package
// documentation: over random windows of 1 to 100,000 values from several distributions,
// split over up to 20 partials merged in two levels (as a sink refolds a stored window),
// with exact limits from none to 1000, for both methods and q from 0.001 to 0.999, at most
// max(1, n/100) of the n values lie strictly between the quantile and the method's exact
// quantile. Below the exact limit the quantile is the exact one.
func TestQuantileAccuracy(t *testing.T) {
	windows := 1000
	if testing.Short() || raceEnabled {
		windows = 150
	}
	r := rand.New(rand.NewPCG(2026, 90))
	limits := []int{-1, 16, 0, 1000}
	qs := []float64{0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999}
	var worst, worstOffset float64   // worst as a fraction of the bound; rankOffset, n > 256
	worstAt := map[float64]float64{} // by q: the largest fraction of n between, n > 256
	for w := range windows {
		d := distributions[w%len(distributions)]
		limit := limits[(w/len(distributions))%len(limits)]
		n := int(math.Exp(r.Float64() * math.Log(100000)))
		vals, merged := randomMerge(t, r, d, n, limit)
		s := sorted(vals)
		for _, m := range []QuantileMethod{Linear, NearestRank} {
			for _, q := range qs {
				exact, got := m.exact(s, q), merged.Quantile(m, q)
				if merged.Exact() {
					require.Equal(t, exact, got, "%s n=%d limit=%d %v q=%v: exact below the limit", d.name, n, limit, m, q)
					continue
				}
				bound := math.Max(1, float64(n)/100)
				b := float64(between(s, exact, got))
				require.LessOrEqual(t, b, bound, "%s n=%d limit=%d %v q=%v: %v, exact %v", d.name, n, limit, m, q, got, exact)
				worst = math.Max(worst, b/bound)
				if n > DefaultExactLimit {
					worstAt[q] = math.Max(worstAt[q], b/float64(n))
					if !d.ties {
						worstOffset = math.Max(worstOffset, rankOffset(s, q, got))
					}
				}
			}
		}
	}
	t.Logf("over %d windows: at most %.2f of the bound max(1, n/100) strictly between; "+
		"max |rank/n - q| %.3f%% (n > %d, distributions without ties)", windows, worst, 100*worstOffset, DefaultExactLimit)
	for _, q := range qs {
		t.Logf("q=%v: at most %.3f%% of n strictly between (n > %d)", q, 100*worstAt[q], DefaultExactLimit)
	}
	assert.LessOrEqual(t, worst, 1.0)
}

// randomMerge draws n values of d, adds each to one of up to 20 Stats with the given exact
// limit, and merges them in two levels. It returns the values and the merge.
func randomMerge(t *testing.T, r *rand.Rand, d distribution, n, limit int) ([]float64, *Stats) {
	t.Helper()
	parts := make([]*Stats, 1+r.IntN(20))
	for i := range parts {
		parts[i] = NewStats()
		require.NoError(t, parts[i].SetExactLimit(limit))
	}
	vals := make([]float64, n)
	for i := range vals {
		vals[i] = d.gen(r)
		require.NoError(t, parts[r.IntN(len(parts))].Add(vals[i]))
	}
	h := len(parts) / 2
	first, err := Merge(parts[:h]...)
	require.NoError(t, err)
	merged, err := Merge(append([]*Stats{first}, parts[h:]...)...)
	require.NoError(t, err)
	return vals, merged
}
