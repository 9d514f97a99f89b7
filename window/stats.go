package window

import (
	"fmt"
	"math"
	"slices"
)

const (
	// compression is the t-digest compression δ of every digest. It is fixed so that
	// partials written by any process merge into the same bytes.
	compression = 100

	// DefaultExactLimit is the exact limit of a [Stats] whose limit is not set (see
	// [Config.ExactLimit]): up to this many values are kept exactly, and the next one
	// folds them into a t-digest.
	DefaultExactLimit = 256

	// MaxExactLimit bounds an exact limit. An exact Stats holds 8 bytes per value in
	// memory, so this bounds one key's buffer to 512 KiB.
	MaxExactLimit = 1 << 16

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
// Up to its exact limit ([DefaultExactLimit] unless set with [Stats.SetExactLimit] or by
// the [Windows] that built it) values are kept exactly and quantiles are exact; past that
// the values are summarised by a t-digest (see the package documentation for the error
// bound). The zero value is an empty Stats ready to use. A Stats is not safe for concurrent use:
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
	// limit is the exact limit in the form of exactLimitSetting.
	limit int32
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
	// An exact Stats holds at most its exact limit of values: the next one first turns it
	// into a digest. A digest buffers up to pendingLimit values between merge passes.
	limit := s.ExactLimit()
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

// Quantile returns the q-quantile (0 <= q <= 1) of the values by definition m: exact, by the
// definition [QuantileMethod] documents, while [Stats.Exact]; estimated by go-tdigest and
// clamped to [Min, Max] otherwise, whatever m. The q-quantile of 0 is Min and that of 1 is
// Max. It returns NaN for an empty Stats, a q outside [0, 1] or an unknown method.
func (s *Stats) Quantile(m QuantileMethod, q float64) float64 {
	if s.count == 0 || !(q >= 0 && q <= 1) || !m.Valid() {
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
		return m.exact(s.vals, q)
	}
	td := s.dig.view()
	if td == nil {
		return math.NaN()
	}
	return math.Max(s.min, math.Min(td.Quantile(q), s.max))
}

// ExactLimit returns the exact limit: how many values s keeps exactly before it folds
// them into a t-digest, 0 if it never keeps any.
func (s *Stats) ExactLimit() int {
	switch {
	case s.limit == 0:
		return DefaultExactLimit
	case s.limit < 0:
		return 0
	}
	return int(s.limit)
}

// SetExactLimit sets the exact limit, with the rule of [Config.ExactLimit]: zero means
// [DefaultExactLimit], negative means none (a digest from the first value), and a limit
// above [MaxExactLimit] is an error wrapping [ErrConfig], which changes nothing. It applies
// to the values added next and to [Merge]; a Stats that already holds more exact values
// keeps them until its next Add.
func (s *Stats) SetExactLimit(n int) error {
	l, err := exactLimitSetting("ExactLimit", n)
	if err != nil {
		return err
	}
	s.limit = l
	return nil
}

// exactLimitSetting checks an exact limit setting named field and returns its stored form:
// 0 for the default, -1 for none, the limit otherwise.
func exactLimitSetting(field string, n int) (int32, error) {
	switch {
	case n < 0:
		return -1, nil
	case n > MaxExactLimit:
		return 0, fmt.Errorf("%w: %s is %d, want at most MaxExactLimit (%d), zero for the default %d, or negative for none",
			ErrConfig, field, n, MaxExactLimit, DefaultExactLimit)
	}
	return int32(n), nil
}

// Clone returns a deep copy of s.
func (s *Stats) Clone() *Stats {
	c := &Stats{count: s.count, sum: s.sum, min: s.min, max: s.max, limit: s.limit}
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
