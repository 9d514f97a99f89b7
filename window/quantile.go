package window

import (
	"fmt"
	"math"

	"github.com/streamledger/streamledger/internal/quantile"
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

// exact returns the q-quantile (0 <= q <= 1) of sorted values by definition m: the number
// [Stats.Quantile] returns while the Stats is exact. The values must be sorted in ascending
// order. It returns NaN for an empty slice, a q outside [0, 1] or an unknown method.
func (m QuantileMethod) exact(sorted []float64, q float64) float64 {
	switch m {
	case Linear:
		return quantile.Linear(sorted, q)
	case NearestRank:
		return quantile.NearestRank(sorted, q)
	}
	return math.NaN()
}
