package window

import (
	"fmt"
	"math"
	"slices"
)

// Merge returns the aggregate of parts, as if every value added to any part had been
// added to one Stats: count, min and max exact, sum accumulated in argument order, and
// quantiles exact if the total count is at most [ExactLimit], from one merge pass over
// all the parts' centroids and values otherwise.
//
// Merge is deterministic: the same parts in the same order give identical bytes and
// quantiles, whether the parts were built in memory or decoded with
// [Stats.UnmarshalBinary]. Quantiles do not depend on the order at all. A merge of one
// non-empty part is a copy of it. Merge folds the parts' buffered values but does not
// otherwise change them. It returns an error for a nil part or a total count that
// overflows int64.
func Merge(parts ...*Stats) (*Stats, error) {
	out := &Stats{}
	nonEmpty, last := 0, -1
	for i, p := range parts {
		if p == nil {
			return nil, fmt.Errorf("window: Merge: part %d of %d is nil", i, len(parts))
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
		nonEmpty++
		last = i
	}
	switch {
	case nonEmpty == 0:
		return out, nil
	case nonEmpty == 1:
		return parts[last].Clone(), nil
	}
	if out.count <= ExactLimit {
		out.vals = make([]float64, 0, out.count)
		for _, p := range parts {
			out.vals = append(out.vals, p.vals...)
		}
		sortFloats(out.vals)
		out.sorted = true
		return out, nil
	}
	var buf scratch
	items := make([]point, 0, mergeItems(parts))
	for _, p := range parts {
		p.seal()
		for _, v := range p.vals {
			items = append(items, point{v, 1})
		}
		if p.dig != nil {
			r := newCentroidReader(p.dig.enc)
			for m, w, ok := r.next(); ok; m, w, ok = r.next() {
				items = append(items, point{m, w})
			}
		}
	}
	slices.SortFunc(items, comparePoint)
	var c clusterer
	c.reset(out.count, &buf)
	for _, it := range items {
		c.push(it.mean, it.weight)
	}
	out.dig = &digest{enc: c.finish(nil)}
	out.sorted = true
	return out, nil
}

func mergeItems(parts []*Stats) int {
	n := 0
	for _, p := range parts {
		n += len(p.vals)
		if p.dig != nil {
			n += p.dig.centroids()
		}
	}
	return n
}

func comparePoint(a, b point) int {
	switch {
	case lessPoint(a, b):
		return -1
	case lessPoint(b, a):
		return 1
	}
	return 0
}
