package window

import (
	"fmt"
	"math"
)

// QuantileMethod is a definition of the q-quantile of n values x[0] <= ... <= x[n-1]: how
// [Stats.Quantile] picks or interpolates between the values around rank q while it holds
// them exactly. Above the exact limit both methods return the t-digest's estimate, whose
// rank error the package documentation bounds.
type QuantileMethod uint8

const (
	// Linear interpolates between the two closest ranks: with h = q·(n-1) and i = ⌊h⌋, it
	// is x[i] + (h-i)·(x[i+1]-x[i]), or x[i] when h is whole. It equals PostgreSQL's
	// percentile_cont, numpy's default method and R's type 7 (Hyndman and Fan).
	//
	// Linear is the zero value, and so the default of every setting of this type: a table
	// whose specification names no method keeps the definition of the rows it already
	// stores, which are merged again when a window is refolded, and it is the definition
	// most tools use when none is named.
	Linear QuantileMethod = iota
	// NearestRank is the smallest value whose rank reaches q·n: x[max(⌈q·n⌉, 1) - 1],
	// always one of the values. It equals PostgreSQL's percentile_disc, numpy's
	// "inverted_cdf" method and R's type 1.
	NearestRank
)

// String returns "linear" or "nearest-rank".
func (m QuantileMethod) String() string {
	switch m {
	case Linear:
		return "linear"
	case NearestRank:
		return "nearest-rank"
	}
	return fmt.Sprintf("QuantileMethod(%d)", uint8(m))
}

// Valid reports whether m is one of the methods defined here.
func (m QuantileMethod) Valid() bool { return m <= NearestRank }

// Exact returns the q-quantile (0 <= q <= 1) of sorted values by definition m: the number
// [Stats.Quantile] returns while the Stats is exact, exported so that tests and oracles
// elsewhere compute the same number. The values must be sorted in ascending order. It
// returns NaN for an empty slice, a q outside [0, 1] or an unknown method.
func (m QuantileMethod) Exact(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 || !(q >= 0 && q <= 1) || !m.Valid() {
		return math.NaN()
	}
	if m == NearestRank {
		r := int(math.Ceil(q * float64(n)))
		return sorted[max(r, 1)-1]
	}
	h := q * float64(n-1)
	i := int(h)
	if i >= n-1 {
		return sorted[n-1]
	}
	f := h - float64(i)
	if f == 0 {
		return sorted[i]
	}
	// The conversion keeps the product rounded on its own, as PostgreSQL computes it:
	// a fused multiply-add would differ in the last bit.
	return sorted[i] + float64(f*(sorted[i+1]-sorted[i]))
}
