// Package quantile holds the exact definitions of a quantile that package window offers
// (window.Linear and window.NearestRank): window computes a Stats' quantile by them while it
// holds every value, and the tests of the sinks and the OV example's oracle compute the
// numbers they expect by them.
package quantile

import "math"

// Linear returns the q-quantile (0 <= q <= 1) of sorted values by linear interpolation
// between the two closest ranks, PostgreSQL's percentile_cont: with h = q·(n-1) and i = ⌊h⌋,
// x[i] + (h-i)·(x[i+1]-x[i]), or x[i] when h is whole. The values must be sorted in
// ascending order. It returns NaN for an empty slice or a q outside [0, 1].
func Linear(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 || !(q >= 0 && q <= 1) {
		return math.NaN()
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

// NearestRank returns the q-quantile (0 <= q <= 1) of sorted values by nearest rank,
// PostgreSQL's percentile_disc: the smallest value whose rank reaches q·n,
// x[max(⌈q·n⌉, 1) - 1]. The values must be sorted in ascending order. It returns NaN for
// an empty slice or a q outside [0, 1].
func NearestRank(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 || !(q >= 0 && q <= 1) {
		return math.NaN()
	}
	r := int(math.Ceil(q * float64(n)))
	return sorted[max(r, 1)-1]
}
