package window

import (
	"encoding/binary"
	"math"

	"github.com/caio/go-tdigest/v4"
)

// Layout of the go-tdigest v4 "small encoding", which this package uses both in memory
// and on the wire for digest-mode Stats: big-endian int32 encoding (2), float64
// compression, int32 centroid count n, n float32 deltas between consecutive centroid
// means (the first from 0), then n uvarint centroid weights.
const (
	tdEncoding  = 2
	tdHeaderLen = 16
	// digestSeed seeds the random source of every tdigest.TDigest built here, so that no
	// library call can ever draw from a shared source.
	digestSeed = 1
)

// digest is the digest-mode state of a Stats: the centroids, kept in their canonical
// serialized form. A centroid mean is exactly what tdigest's decoder computes from the
// stored float32 deltas, so a Stats and its decoded copy hold bit-identical digests.
type digest struct {
	enc []byte           // tdigest small encoding of the centroids
	td  *tdigest.TDigest // lazily decoded view of enc for quantile queries; nil when not built
}

// view returns enc decoded by go-tdigest, or nil if the library rejects it, which the
// checks in this package make unreachable.
func (d *digest) view() *tdigest.TDigest {
	if d.td != nil {
		return d.td
	}
	td, err := tdigest.New(tdigest.Compression(compression), tdigest.RandomNumberGenerator(&fixedRNG{state: digestSeed}))
	if err != nil || td.FromBytes(d.enc) != nil {
		return nil
	}
	d.td = td
	return td
}

// centroidReader walks the centroids of a small encoding in ascending mean order.
type centroidReader struct {
	enc  []byte
	n    int
	i    int
	dpos int // next delta
	cpos int // next uvarint weight
	x    float64
}

func newCentroidReader(enc []byte) centroidReader {
	if len(enc) < tdHeaderLen {
		return centroidReader{}
	}
	n := int(binary.BigEndian.Uint32(enc[12:16]))
	return centroidReader{enc: enc, n: n, dpos: tdHeaderLen, cpos: tdHeaderLen + 4*n}
}

func (r *centroidReader) next() (mean float64, weight uint64, ok bool) {
	if r.i >= r.n {
		return 0, 0, false
	}
	r.x += float64(math.Float32frombits(binary.BigEndian.Uint32(r.enc[r.dpos:])))
	r.dpos += 4
	w, k := binary.Uvarint(r.enc[r.cpos:])
	r.cpos += k
	r.i++
	return r.x, w, true
}

// clusterer is one pass of a merging t-digest: it takes weighted points in ascending
// order of mean and greedily merges neighbours while the merged centroid's weight w stays
// within go-tdigest's own size bound, w <= 4·N·q·(1-q)/δ, where q is the centroid's
// centre rank. It needs no random source, so the result is a pure function of its input.
type clusterer struct {
	total  float64 // N
	bound  float64 // N·δ/4: the bound above, multiplied out as w·N·δ/4 <= a·(N-a), a = q·N
	cum    float64 // weight of the centroids already emitted
	w      uint64  // weight of the open centroid; 0 if none
	n      int     // points merged into the open centroid
	sum    float64 // Σ mean·weight of the open centroid
	lo     float64 // smallest mean merged into the open centroid
	hi     float64 // largest mean merged into the open centroid
	prev   float64 // decoded mean of the last emitted centroid
	deltas []float32
	counts []uint64
}

// scratch is working memory lent to Stats operations, so that a Windows reuses it
// across keys instead of allocating per fold.
//
// With slab set it also allocates value buffers: carved from large chunks (one
// allocation per chunk instead of one per growth step per key, and chunks hold no
// pointers for the collector to scan), with the buffer a key outgrows kept on a free
// list for the next key that needs that size. Every key grows through the same sizes,
// so outgrown buffers are soon reused and memory stays close to the capacity in use.
type scratch struct {
	deltas []float32
	counts []uint64
	keys   []uint64
	tmp    []uint64
	slab   bool
	chunk  []float64
	free   [sizeClasses][][]float64 // outgrown buffers by capacity 4<<class, length 0
}

const (
	slabChunk   = 1 << 13 // values per slab chunk (64 KiB)
	minBuffer   = 4       // capacity of a key's first value buffer
	sizeClasses = 9       // buffer capacities 4, 8, ..., 1024 = pendingLimit
)

// grow returns a copy of vals with room for more values, up to limit in all.
// sc may be nil.
func (sc *scratch) grow(vals []float64, limit int) []float64 {
	n := min(max(minBuffer, 2*cap(vals)), limit)
	if sc == nil || !sc.slab {
		out := make([]float64, len(vals), n)
		copy(out, vals)
		return out
	}
	var out []float64
	if c, ok := sizeClass(n); ok && len(sc.free[c]) > 0 {
		f := sc.free[c]
		out = f[len(f)-1][:len(vals)]
		f[len(f)-1] = nil
		sc.free[c] = f[:len(f)-1]
	} else {
		if cap(sc.chunk)-len(sc.chunk) < n {
			sc.chunk = make([]float64, 0, max(slabChunk, n))
		}
		l := len(sc.chunk)
		sc.chunk = sc.chunk[:l+n]
		out = sc.chunk[l : l+len(vals) : l+n]
	}
	copy(out, vals)
	if c, ok := sizeClass(cap(vals)); ok {
		sc.free[c] = append(sc.free[c], vals[:0])
	}
	return out
}

// dropFree empties the free lists. A buffer on them keeps its whole chunk alive, and the
// chunks of closed windows would otherwise outlive the partials that use them.
func (sc *scratch) dropFree() { sc.free = [sizeClasses][][]float64{} }

// sizeClass returns the free-list index of a buffer capacity, if it has one.
func sizeClass(c int) (int, bool) {
	for i := range sizeClasses {
		if c == minBuffer<<i {
			return i, true
		}
	}
	return 0, false
}

type point struct {
	mean   float64
	weight uint64
}

func (c *clusterer) reset(total int64, sc *scratch) {
	*c = clusterer{
		total:  float64(total),
		bound:  float64(total) * compression / 4,
		deltas: sc.deltas[:0],
		counts: sc.counts[:0],
	}
}

func (c *clusterer) push(mean float64, weight uint64) {
	if c.w > 0 {
		p := float64(c.w + weight)
		a := c.cum + p/2
		if p*c.bound <= a*(c.total-a) {
			c.w += weight
			c.n++
			c.sum += mean * float64(weight)
			c.hi = mean
			return
		}
		c.emit()
	}
	c.w = weight
	c.n = 1
	c.sum = mean * float64(weight)
	c.lo, c.hi = mean, mean
}

// emit closes the open centroid. Its mean is stored as a float32 delta from the previous
// decoded mean (the first from 0), with the rounding error fed forward, and after the first
// never negative, so that decoded means stay ascending and within float32 precision of
// the true centroid means.
func (c *clusterer) emit() {
	m := c.lo
	if c.n > 1 {
		m = math.Max(c.lo, math.Min(c.sum/float64(c.w), c.hi))
	}
	d := float32(m - c.prev)
	if d < 0 && len(c.deltas) > 0 {
		d = 0
	}
	c.prev += float64(d)
	c.deltas = append(c.deltas, d)
	c.counts = append(c.counts, c.w)
	c.cum += float64(c.w)
	c.w = 0
}

// finish emits the open centroid, appends the small encoding to dst and returns the
// working slices to sc.
func (c *clusterer) finish(dst []byte, sc *scratch) []byte {
	if c.w > 0 {
		c.emit()
	}
	sc.deltas, sc.counts = c.deltas, c.counts
	return appendSmallEncoding(dst, c.deltas, c.counts)
}

func appendSmallEncoding(dst []byte, deltas []float32, counts []uint64) []byte {
	dst = binary.BigEndian.AppendUint32(dst, tdEncoding)
	dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(compression))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(deltas)))
	for _, d := range deltas {
		dst = binary.BigEndian.AppendUint32(dst, math.Float32bits(d))
	}
	for _, w := range counts {
		dst = binary.AppendUvarint(dst, w)
	}
	return dst
}

// lessPoint orders points by mean, then weight, so that equal inputs in any order
// cluster identically.
func lessPoint(a, b point) bool {
	return a.mean < b.mean || (a.mean == b.mean && a.weight < b.weight)
}

// fixedRNG is a seeded splitmix64 source for tdigest.RandomNumberGenerator. The digests
// here are built by a deterministic merge pass and only queried through go-tdigest, which
// draws no random numbers for that; the source is set anyway so that every TDigest is
// deterministic whatever is called on it. It is cheaper to create than
// tdigest.LocalRandomNumberGenerator, which seeds a math/rand table of 607 words.
type fixedRNG struct{ state uint64 }

func (r *fixedRNG) next() uint64 {
	r.state += 0x9e3779b97f4a7c15
	z := r.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Float32 returns a number in [0, 1).
func (r *fixedRNG) Float32() float32 { return float32(r.next()>>40) / (1 << 24) }

// Intn returns a number in [0, n), or 0 if n <= 0.
func (r *fixedRNG) Intn(n int) int {
	if n <= 0 {
		return 0
	}
	return int(r.next() % uint64(n))
}
