package window

import (
	"math"
	"slices"
)

// radixMin is the length from which sortFloats uses a radix sort. Below it pdqsort's
// constant factors win.
const radixMin = 64

// sortFloats sorts finite values in ascending order; sc, which may be nil, lends
// scratch space.
//
// Buffers of a digest are sorted before every merge pass, and comparison sorts of
// unpredictable data pay a branch miss per comparison. An LSD radix sort on the
// order-preserving integer image of the values costs a few passes instead, and skips
// every byte that is the same in all values: for durations in whole seconds, all but
// three of the eight.
func sortFloats(v []float64, sc *scratch) {
	n := len(v)
	if n < radixMin {
		slices.Sort(v)
		return
	}
	if sc == nil {
		sc = new(scratch)
	}
	if cap(sc.keys) < n {
		sc.keys = make([]uint64, n)
		sc.tmp = make([]uint64, n)
	}
	keys, tmp := sc.keys[:n], sc.tmp[:n]
	// A byte that is the same in every value's raw bits needs no pass: among keys that
	// tie on all higher bytes (so have the same sign), its image is the same too.
	and, or := ^uint64(0), uint64(0)
	for i, f := range v {
		b := math.Float64bits(f)
		and &= b
		or |= b
		keys[i] = sortKey(f)
	}
	varying := and ^ or
	for shift := uint(0); shift < 64; shift += 8 {
		if (varying>>shift)&0xff == 0 {
			continue
		}
		var count [256]uint32
		for _, k := range keys {
			count[byte(k>>shift)]++
		}
		var sum uint32
		for i, c := range count {
			count[i] = sum
			sum += c
		}
		for _, k := range keys {
			d := byte(k >> shift)
			tmp[count[d]] = k
			count[d]++
		}
		keys, tmp = tmp, keys
	}
	for i, k := range keys {
		v[i] = fromSortKey(k)
	}
}

// sortKey maps a float64 to a uint64 with the same order (for non-NaN values, with
// -0 below +0, which add never stores).
func sortKey(f float64) uint64 {
	b := math.Float64bits(f)
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
}

func fromSortKey(k uint64) float64 {
	if k>>63 != 0 {
		return math.Float64frombits(k &^ (1 << 63))
	}
	return math.Float64frombits(^k)
}
