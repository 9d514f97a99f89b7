package window

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
)

// encodingVersion is the first byte of every serialized [Stats].
const encodingVersion = 1

// Kinds of serialized Stats (second byte).
const (
	kindEmpty  = 0 // nothing follows
	kindFloats = 1 // exact: values as float64
	kindInts   = 2 // exact: every value an integer of magnitude at most 2^53
	kindDigest = 3 // t-digest
)

const maxExactInt = 1 << 53

// MarshalBinary returns the compact, versioned serialization of s described in the
// package documentation. Equal Stats give identical bytes. It never fails; the error is
// there for encoding.BinaryMarshaler.
func (s *Stats) MarshalBinary() ([]byte, error) {
	return s.AppendBinary(make([]byte, 0, s.encodedSizeHint()))
}

// AppendBinary appends the serialization of s to b (see [Stats.MarshalBinary]).
func (s *Stats) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, encodingVersion)
	if s.count == 0 {
		return append(b, kindEmpty), nil
	}
	s.seal()
	switch {
	case s.dig != nil:
		b = append(b, kindDigest)
		b = binary.AppendUvarint(b, uint64(s.count))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(s.sum))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(s.min))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(s.max))
		return append(b, s.dig.enc...), nil
	case allInts(s.vals):
		b = append(b, kindInts)
		b = binary.AppendUvarint(b, uint64(s.count))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(s.sum))
		prev := int64(s.vals[0])
		b = binary.AppendVarint(b, prev)
		for _, v := range s.vals[1:] {
			x := int64(v)
			b = binary.AppendUvarint(b, uint64(x-prev))
			prev = x
		}
		return b, nil
	default:
		b = append(b, kindFloats)
		b = binary.AppendUvarint(b, uint64(s.count))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(s.sum))
		for _, v := range s.vals {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		}
		return b, nil
	}
}

func (s *Stats) encodedSizeHint() int {
	if s.dig != nil {
		return 2 + 10 + 24 + len(s.dig.enc) + 10*len(s.vals)
	}
	return 2 + 10 + 8 + 8*len(s.vals)
}

func allInts(vals []float64) bool {
	for _, v := range vals {
		if v != math.Trunc(v) || v > maxExactInt || v < -maxExactInt {
			return false
		}
	}
	return true
}

// UnmarshalBinary replaces the values of s with the Stats serialized in data; s keeps its
// exact limit, which is a setting of the reader, not part of the data. Input that is
// truncated, garbled or not exactly what [Stats.MarshalBinary] produces is rejected with an
// error wrapping [ErrCorrupt], and an unknown version byte with one wrapping [ErrVersion];
// on error s is unchanged. The values go into the storage s already has where it has room,
// so that a Stats decoded into again and again (one per goroutine of a merge, say) allocates
// only to grow.
func (s *Stats) UnmarshalBinary(data []byte) error {
	into := s.vals[:0]
	if cap(into) > 0 {
		// The storage is written as the values are checked: check them first, so that an
		// error leaves s as it was.
		if _, err := readStats(data, false, nil); err != nil {
			return err
		}
	}
	t, err := readStats(data, true, into)
	if err != nil {
		return err
	}
	t.limit = s.limit
	*s = t
	return nil
}

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

// readStats validates data and returns the Stats it holds, its values in into where into has
// room for them. Without keep it builds nothing that allocates: the values are checked but
// not stored (the result then holds the count, the sum and, for a digest, the min and max).
func readStats(data []byte, keep bool, into []float64) (Stats, error) {
	if len(data) < 2 {
		return Stats{}, corrupt("%d bytes, want at least 2", len(data))
	}
	if data[0] != encodingVersion {
		return Stats{}, fmt.Errorf("%w: version byte %d, want %d", ErrVersion, data[0], encodingVersion)
	}
	kind := data[1]
	p := data[2:]
	if kind == kindEmpty {
		if len(p) != 0 {
			return Stats{}, corrupt("%d bytes after an empty stats, want 0", len(p))
		}
		return Stats{}, nil
	}
	if kind > kindDigest {
		return Stats{}, corrupt("kind %d, want 0 to %d", kind, kindDigest)
	}
	count, k := readUvarint(p)
	if k <= 0 {
		return Stats{}, corrupt("bad count varint")
	}
	p = p[k:]
	if count == 0 || count > math.MaxInt64 {
		return Stats{}, corrupt("count %d, want 1 to %d", count, int64(math.MaxInt64))
	}
	if len(p) < 8 {
		return Stats{}, corrupt("truncated sum")
	}
	s := Stats{count: int64(count), sum: math.Float64frombits(binary.LittleEndian.Uint64(p))}
	p = p[8:]
	if !(math.Abs(s.sum) <= float64(count)*MaxValue) {
		return Stats{}, corrupt("sum is %v, want a finite number of magnitude at most count·MaxValue", s.sum)
	}
	if kind == kindDigest {
		s.vals = into // none buffered; the storage stays for a later decode
		return readDigest(s, p, keep)
	}
	if count > MaxExactLimit {
		return Stats{}, corrupt("exact stats with count %d, want at most MaxExactLimit (%d)", count, MaxExactLimit)
	}
	var vals []float64 // nil: values checked, not stored
	switch {
	case !keep:
	case uint64(cap(into)) >= count:
		vals = into[:count]
	default:
		vals = make([]float64, count)
	}
	var err error
	if kind == kindFloats {
		err = decodeFloats(p, int(count), vals)
	} else {
		err = decodeInts(p, int(count), vals)
	}
	if err != nil {
		return Stats{}, err
	}
	if keep {
		s.vals, s.min, s.max = vals, vals[0], vals[len(vals)-1]
	}
	return s, nil
}

// readDigest reads the min, max and digest that follow a digest's count and sum into s.
func readDigest(s Stats, p []byte, keep bool) (Stats, error) {
	if len(p) < 16 {
		return Stats{}, corrupt("truncated min and max")
	}
	s.min = math.Float64frombits(binary.LittleEndian.Uint64(p))
	s.max = math.Float64frombits(binary.LittleEndian.Uint64(p[8:]))
	p = p[16:]
	if !validValue(s.min) || !validValue(s.max) || s.min > s.max {
		return Stats{}, corrupt("min %v and max %v, want finite values with min <= max", s.min, s.max)
	}
	if err := checkSmallEncoding(p, uint64(s.count)); err != nil {
		return Stats{}, err
	}
	if keep {
		s.dig = &digest{enc: bytes.Clone(p)}
	}
	return s, nil
}

// decodeFloats checks the n float64 values in p (ascending, valid, not all integers) and, if
// vals is not nil, stores them there.
func decodeFloats(p []byte, n int, vals []float64) error {
	if len(p) != 8*n {
		return corrupt("%d bytes of values, want %d", len(p), 8*n)
	}
	ints := true
	prev := 0.0
	for i := range n {
		v := math.Float64frombits(binary.LittleEndian.Uint64(p[8*i:]))
		if !validValue(v) || (v == 0 && math.Signbit(v)) {
			return corrupt("value %d is %v, want a finite value of magnitude at most %g, not -0", i, v, float64(MaxValue))
		}
		if i > 0 && v < prev {
			return corrupt("value %d (%v) below value %d (%v), want ascending", i, v, i-1, prev)
		}
		if v != math.Trunc(v) || v > maxExactInt || v < -maxExactInt {
			ints = false
		}
		if vals != nil {
			vals[i] = v
		}
		prev = v
	}
	if ints {
		return corrupt("integer values in float form, want the integer encoding")
	}
	return nil
}

// decodeInts checks the n integer values in p (a zigzag first value, then ascending gaps,
// each within 2^53) and, if vals is not nil, stores them there.
func decodeInts(p []byte, n int, vals []float64) error {
	zz, k := readUvarint(p)
	if k <= 0 {
		return corrupt("bad first value varint")
	}
	first := int64(zz >> 1)
	if zz&1 != 0 {
		first = ^first
	}
	if first > maxExactInt || first < -maxExactInt {
		return corrupt("first value %d, want magnitude at most 2^53", first)
	}
	p = p[k:]
	if vals != nil {
		vals[0] = float64(first)
	}
	prev := first
	for i := 1; i < n; i++ {
		gap, k := readUvarint(p)
		if k <= 0 {
			return corrupt("bad gap varint before value %d", i)
		}
		p = p[k:]
		if gap > uint64(maxExactInt-prev) {
			return corrupt("value %d exceeds 2^53", i)
		}
		prev += int64(gap)
		if vals != nil {
			vals[i] = float64(prev)
		}
	}
	if len(p) != 0 {
		return corrupt("%d bytes after the last value", len(p))
	}
	return nil
}

// checkSmallEncoding validates a go-tdigest small encoding as this package writes it:
// compression 100, 1 to count centroids with ascending means in range, positive
// weights summing to count, minimal varints and nothing after them.
func checkSmallEncoding(p []byte, count uint64) error {
	if len(p) < tdHeaderLen {
		return corrupt("digest of %d bytes, want at least %d", len(p), tdHeaderLen)
	}
	if e := binary.BigEndian.Uint32(p); e != tdEncoding {
		return corrupt("digest encoding %d, want %d", e, tdEncoding)
	}
	if c := math.Float64frombits(binary.BigEndian.Uint64(p[4:])); c != compression {
		return corrupt("digest compression %v, want %v", c, float64(compression))
	}
	n := uint64(binary.BigEndian.Uint32(p[12:]))
	if n == 0 || n > count {
		return corrupt("%d centroids for %d values, want 1 to %d", n, count, count)
	}
	if uint64(len(p)-tdHeaderLen) < 5*n {
		return corrupt("digest of %d bytes too short for %d centroids", len(p), n)
	}
	x := 0.0
	for i := range int(n) {
		d := math.Float32frombits(binary.BigEndian.Uint32(p[tdHeaderLen+4*i:]))
		if math.IsNaN(float64(d)) || math.IsInf(float64(d), 0) || (i > 0 && d < 0) {
			return corrupt("centroid %d delta %v, want finite and, after the first, >= 0", i, d)
		}
		x += float64(d)
		if x > 2*MaxValue || x < -2*MaxValue {
			return corrupt("centroid %d mean %v out of range", i, x)
		}
	}
	q := p[tdHeaderLen+4*int(n):]
	var total uint64
	for i := range int(n) {
		w, k := readUvarint(q)
		if k <= 0 {
			return corrupt("bad weight varint of centroid %d", i)
		}
		if w == 0 || w > count-total {
			return corrupt("centroid %d weight %d, want 1 to %d", i, w, count-total)
		}
		total += w
		q = q[k:]
	}
	if total != count {
		return corrupt("centroid weights sum to %d, want count %d", total, count)
	}
	if len(q) != 0 {
		return corrupt("%d bytes after the digest", len(q))
	}
	return nil
}

// readUvarint is binary.Uvarint restricted to minimal encodings, so that every accepted
// input re-encodes to itself. It returns k <= 0 on error.
func readUvarint(p []byte) (uint64, int) {
	x, k := binary.Uvarint(p)
	if k <= 0 || k != uvarintLen(x) {
		return 0, -1
	}
	return x, k
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}
