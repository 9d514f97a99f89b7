package window

import (
	"fmt"
	"math"
	"slices"
)

const (
	// Compression is the t-digest compression δ of every digest. It is fixed so that
	// partials written by any process merge into the same bytes.
	Compression = 100

	// ExactLimit is the largest count a [Stats] keeps as exact values. Past it the
	// values are folded into a t-digest.
	ExactLimit = 256

	// MaxValue bounds the magnitude of values accepted by [Stats.Add]; digest centroid
	// means are stored as float32 deltas, which must stay finite.
	MaxValue = 1e38

	// pendingLimit is how many values a digest buffers before folding them, sorted,
	// into its centroids in one merge pass.
	pendingLimit = 1024
)

// Stats is the aggregate of the values of one (window, key) in one source partition:
// count, sum, mean, min, max and quantiles.
//
// Up to [ExactLimit] values are kept exactly and quantiles are exact; past that the values
// are summarised by a t-digest (see the package documentation for the error bound).
// The zero value is an empty Stats ready to use. A Stats is not safe for concurrent use:
// Quantile, MarshalBinary and Merge first seal it (sort an exact Stats' values, fold a
// digest's buffer), which changes no reported value; once sealed, as the partials of
// [Windows.Close] are, MarshalBinary and Merge only read it. Copy it with
// [Stats.Clone], never by assignment.
type Stats struct {
	count int64
	sum   float64
	min   float64
	max   float64
	// vals holds every value in exact mode (dig == nil) and the values not yet folded
	// into the digest in digest mode.
	vals []float64
	dig  *digest
}

// NewStats returns an empty Stats.
func NewStats() *Stats { return &Stats{} }

// Add adds one value. It returns an error wrapping [ErrInvalidValue], and changes
// nothing, if v is NaN, infinite or larger in magnitude than [MaxValue].
// Negative zero is stored as zero.
func (s *Stats) Add(v float64) error {
	if !validValue(v) {
		return invalidValue(v)
	}
	s.add(v, nil)
	return nil
}

func validValue(v float64) bool { return v >= -MaxValue && v <= MaxValue }

func invalidValue(v float64) error {
	return fmt.Errorf("%w: got %v, want a finite value of magnitude at most %g", ErrInvalidValue, v, float64(MaxValue))
}

// add adds a valid value. sc, which may be nil, lends scratch space and value storage.
func (s *Stats) add(v float64, sc *scratch) {
	// An exact Stats holds at most ExactLimit values: the next one first turns it into a
	// digest. A digest buffers up to pendingLimit values between merge passes.
	limit := ExactLimit
	if s.dig != nil {
		limit = pendingLimit
	}
	if len(s.vals) >= limit {
		s.flush(sc)
	}
	if v == 0 {
		v = 0 // drop the sign of -0 so that equal multisets serialize identically
	}
	if s.count == 0 {
		s.min, s.max = v, v
	} else if v < s.min {
		s.min = v
	} else if v > s.max {
		s.max = v
	}
	s.count++
	s.sum += v
	if len(s.vals) == cap(s.vals) {
		s.vals = sc.grow(s.vals, limit)
	}
	s.vals = append(s.vals, v)
}

// flush sorts the buffered values and folds them into the digest, creating it if
// needed. sc may be nil.
func (s *Stats) flush(sc *scratch) {
	if sc == nil {
		sc = new(scratch)
	}
	sortFloats(s.vals, sc)
	s.fold(s.vals, sc)
	s.vals = s.vals[:0]
}

// fold merges sorted values into the digest, creating it if needed.
func (s *Stats) fold(sorted []float64, sc *scratch) {
	var c clusterer
	c.reset(s.count, sc)
	var old []byte
	if s.dig != nil {
		old = s.dig.enc
	}
	r := newCentroidReader(old)
	m, w, ok := r.next()
	for _, v := range sorted {
		for ok && lessPoint(point{m, w}, point{v, 1}) {
			c.push(m, w)
			m, w, ok = r.next()
		}
		c.push(v, 1)
	}
	for ok {
		c.push(m, w)
		m, w, ok = r.next()
	}
	if s.dig == nil {
		s.dig = &digest{}
	}
	// Reading old is finished, so its storage can be reused.
	s.dig.enc = c.finish(old[:0], sc)
	s.dig.td = nil
}

// seal folds the buffered values of a digest-mode Stats, or sorts those of an exact
// one, so that both are in the form MarshalBinary writes.
func (s *Stats) seal() { s.sealWith(nil) }

// sealWith is seal with scratch space, which may be nil.
func (s *Stats) sealWith(sc *scratch) {
	switch {
	case s.dig != nil:
		if len(s.vals) > 0 {
			s.flush(sc)
		}
	case !slices.IsSorted(s.vals):
		sortFloats(s.vals, sc)
	}
}

// Count returns the number of values added.
func (s *Stats) Count() int64 { return s.count }

// Sum returns the sum of the values, accumulated in the order they were added.
func (s *Stats) Sum() float64 { return s.sum }

// Mean returns Sum()/Count(), or NaN for an empty Stats.
func (s *Stats) Mean() float64 {
	if s.count == 0 {
		return math.NaN()
	}
	return s.sum / float64(s.count)
}

// Min returns the smallest value, or NaN for an empty Stats.
func (s *Stats) Min() float64 {
	if s.count == 0 {
		return math.NaN()
	}
	return s.min
}

// Max returns the largest value, or NaN for an empty Stats.
func (s *Stats) Max() float64 {
	if s.count == 0 {
		return math.NaN()
	}
	return s.max
}

// Exact reports whether the Stats still holds every value, so that quantiles are exact.
func (s *Stats) Exact() bool { return s.dig == nil }

// Quantile returns the q-quantile (0 <= q <= 1) of the values: exact, by linear
// interpolation between closest ranks, while [Stats.Exact]; estimated by go-tdigest
// and clamped to [Min, Max] otherwise. Quantile(0) is Min and Quantile(1) is Max.
// It returns NaN for an empty Stats or a q outside [0, 1].
func (s *Stats) Quantile(q float64) float64 {
	if s.count == 0 || !(q >= 0 && q <= 1) {
		return math.NaN()
	}
	if q == 0 {
		return s.min
	}
	if q == 1 {
		return s.max
	}
	s.seal()
	if s.dig == nil {
		return ExactQuantile(s.vals, q)
	}
	td := s.dig.view()
	if td == nil {
		return math.NaN()
	}
	return math.Max(s.min, math.Min(td.Quantile(q), s.max))
}

// ExactQuantile is the quantile definition of exact mode, exported so that tests and
// oracles elsewhere compute the same number. For sorted values x[0..n-1] and
// 0 <= q <= 1, with h = q·(n-1), i = ⌊h⌋ and f = h-i, it returns x[i] if f == 0 or
// i == n-1, and x[i] + f·(x[i+1]-x[i]) otherwise (Hyndman and Fan type 7, as in
// numpy's default and R's type 7). It returns NaN for an empty slice or q outside [0, 1].
// The values must be sorted in ascending order.
func ExactQuantile(sorted []float64, q float64) float64 {
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
	return sorted[i] + f*(sorted[i+1]-sorted[i])
}

// Clone returns a deep copy of s.
func (s *Stats) Clone() *Stats {
	c := &Stats{count: s.count, sum: s.sum, min: s.min, max: s.max}
	if len(s.vals) > 0 {
		c.vals = slices.Clone(s.vals)
	}
	if s.dig != nil {
		c.dig = &digest{enc: slices.Clone(s.dig.enc)}
	}
	return c
}

// footprint estimates the memory s holds beyond its own struct: its value buffer and, as
// much again, the smaller buffers it outgrew (a buffer doubles as it grows, and the slab it
// came from is freed only with the window), and its digest's encoding.
func (s *Stats) footprint() int64 {
	n := int64(16 * cap(s.vals))
	if s.dig != nil {
		n += int64(cap(s.dig.enc)) + 48
	}
	return n
}
