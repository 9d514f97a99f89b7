package window

import (
	"fmt"
	"math"
	"slices"
)

// Merge returns the aggregate of parts, as if every value added to any part had been
// added to one Stats: count, min and max exact, sum accumulated in argument order, and
// quantiles exact if every part is exact and the total count is at most the exact limit,
// from one merge pass over all the parts' centroids and values otherwise. The exact limit
// is the largest of the parts' ([Stats.ExactLimit]), and the result has it: every writer of
// the same aggregates must merge with the same limit (set it on decoded parts with
// [Stats.SetExactLimit]).
//
// Merge is deterministic: the same parts in the same order give identical bytes and
// quantiles, whether the parts were built in memory or decoded with
// [Stats.UnmarshalBinary]. Quantiles do not depend on the order at all. A merge of one
// non-empty part is a copy of it. Merge folds the parts' buffered values but does not
// otherwise change them. It returns an error for a nil part or a total count that
// overflows int64.
func Merge(parts ...*Stats) (*Stats, error) {
	out := &Stats{}
	nonEmpty, last, exact := 0, -1, true
	for i, p := range parts {
		if p == nil {
			return nil, fmt.Errorf("window: Merge: part %d of %d is nil", i, len(parts))
		}
		if i == 0 || p.ExactLimit() > out.ExactLimit() {
			out.limit = p.limit
		}
		if p.count == 0 {
			continue
		}
		if out.count > math.MaxInt64-p.count {
			return nil, fmt.Errorf("window: Merge: total count overflows int64 at part %d", i)
		}
		if out.count == 0 {
			out.min, out.max = p.min, p.max
		} else {
			out.min = math.Min(out.min, p.min)
			out.max = math.Max(out.max, p.max)
		}
		out.count += p.count
		out.sum += p.sum
		exact = exact && p.dig == nil
		nonEmpty++
		last = i
	}
	switch {
	case nonEmpty == 0:
		return out, nil
	case nonEmpty == 1:
		c := parts[last].Clone()
		c.limit = out.limit
		return c, nil
	}
	if exact && out.count <= int64(out.ExactLimit()) {
		out.vals = mergeExact(parts, int(out.count))
		return out, nil
	}
	out.dig = &digest{enc: mergeDigest(out.count, parts)}
	return out, nil
}

// mergeSelectMax is the most non-empty parts whose sorted values mergeExact merges by
// picking the smallest head each time; past it a sort is cheaper.
const mergeSelectMax = 8

// mergeExact returns the values of exact parts, n in all, in ascending order. Sealed parts
// (those decoded, or closed by a Windows) hold ascending values, so a merge of them costs a
// pass over the values instead of a sort; otherwise they are sorted. Equal values are
// identical bits (add never stores -0), so either way gives the same slice.
func mergeExact(parts []*Stats, n int) []float64 {
	out := make([]float64, 0, n)
	var buf [mergeSelectMax][]float64
	heads, merge := buf[:0], true
	for _, p := range parts {
		if len(p.vals) == 0 {
			continue
		}
		if len(heads) == mergeSelectMax || !slices.IsSorted(p.vals) {
			merge = false
			break
		}
		heads = append(heads, p.vals)
	}
	if !merge {
		for _, p := range parts {
			out = append(out, p.vals...)
		}
		sortFloats(out, nil)
		return out
	}
	for len(heads) > 0 {
		m := 0
		for i := 1; i < len(heads); i++ {
			if heads[i][0] < heads[m][0] {
				m = i
			}
		}
		out = append(out, heads[m][0])
		if heads[m] = heads[m][1:]; len(heads[m]) == 0 {
			heads = slices.Delete(heads, m, m+1)
		}
	}
	return out
}

// mergeDigest returns the encoded digest of the parts' values and centroids, count in all.
// Every part's values and centroids are in ascending order once sealed: a k-way merge of
// them feeds the clusterer without sorting.
func mergeDigest(count int64, parts []*Stats) []byte {
	srcs := make([]mergeSource, 0, len(parts))
	for _, p := range parts {
		if p.count == 0 {
			continue
		}
		p.seal()
		src := mergeSource{vals: p.vals}
		if p.dig != nil {
			src.r = newCentroidReader(p.dig.enc)
		}
		src.cm.mean, src.cm.weight, src.cok = src.r.next()
		if src.advance() {
			srcs = append(srcs, src)
		}
	}
	h := mergeHeap{srcs: srcs, idx: make([]int, len(srcs))}
	for i := range h.idx {
		h.idx[i] = i
	}
	h.init()
	var c clusterer
	sc := new(scratch)
	c.reset(count, sc)
	for len(h.idx) > 0 {
		top := &srcs[h.idx[0]]
		c.push(top.head.mean, top.head.weight)
		if !top.advance() {
			h.idx[0] = h.idx[len(h.idx)-1]
			h.idx = h.idx[:len(h.idx)-1]
		}
		h.down(0)
	}
	return c.finish(nil, sc)
}

// mergeSource yields one sealed part's values and centroids in ascending order.
type mergeSource struct {
	head point // current smallest
	vals []float64
	r    centroidReader
	cm   point // next centroid, if cok
	cok  bool
}

func (s *mergeSource) advance() bool {
	switch {
	case len(s.vals) > 0 && (!s.cok || lessPoint(point{s.vals[0], 1}, s.cm)):
		s.head = point{s.vals[0], 1}
		s.vals = s.vals[1:]
	case s.cok:
		s.head = s.cm
		s.cm.mean, s.cm.weight, s.cok = s.r.next()
	default:
		return false
	}
	return true
}

// mergeHeap is a min-heap of sources ordered by head. Heads that tie are equal points,
// which the clusterer treats identically in either order, so the result is determined.
type mergeHeap struct {
	srcs []mergeSource
	idx  []int
}

func (h *mergeHeap) init() {
	for i := len(h.idx)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *mergeHeap) less(i, j int) bool {
	return lessPoint(h.srcs[h.idx[i]].head, h.srcs[h.idx[j]].head)
}

func (h *mergeHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h.idx) {
			return
		}
		m := l
		if r := l + 1; r < len(h.idx) && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h.idx[i], h.idx[m] = h.idx[m], h.idx[i]
		i = m
	}
}
