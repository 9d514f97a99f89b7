package fold

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/klauspost/compress/zstd"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/merge"
)

// Version is the first byte of every encoded [Blob]. The second says how the rest is
// compressed: [compressNone], or [compressZstd] for a blob whose encoding is at least
// [compressFrom] bytes long.
const Version = 1

const (
	compressNone = 0
	compressZstd = 1
	// compressFrom is the smallest encoding worth compressing: a compact row of a few keys
	// gains nothing.
	compressFrom = 512
	// maxDecoded bounds what Decode inflates, so that a corrupt or hostile blob cannot
	// exhaust memory.
	maxDecoded = 1 << 30
	// encoderWindow is how far back the encoder looks for a match. The stats repeat little
	// (see Codec), so a longer window finds little more, while the encoder keeps a history of
	// about twice its window for as long as the Codec lives.
	encoderWindow = 1 << 20
)

// Codec encodes and decodes blobs ([Codec.Encode], [Codec.Decode]). A blob past a size is
// compressed with zstd: the stats of a window's keys (sorted values as varint deltas,
// digests) have little repetition for LZ77 alone, but their bytes are far from uniform, which
// zstd's entropy stage takes advantage of. A Codec is safe for concurrent use (it only
// compresses and decompresses whole buffers, which keeps no state between calls), so
// a sink makes one and shares it between its writes. The zero Codec is not usable; make one
// with [NewCodec].
type Codec struct {
	enc *zstd.Encoder
	dec *zstd.Decoder
}

// NewCodec returns a Codec. It starts no goroutine and holds nothing that needs closing.
func NewCodec() (*Codec, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
		zstd.WithWindowSize(encoderWindow))
	if err != nil {
		return nil, fmt.Errorf("fold: zstd encoder: %w", err)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(maxDecoded), zstd.WithDecoderConcurrency(0))
	if err != nil {
		return nil, fmt.Errorf("fold: zstd decoder: %w", err)
	}
	return &Codec{enc, dec}, nil
}

// ErrCorrupt is wrapped by every error of [Codec.Decode]: the bytes are not a blob that
// [Codec.Encode] writes.
var ErrCorrupt = errors.New("fold: corrupt blob")

// Entry is one key's part of a stored row: its dimension and id, its attributes and its
// serialized window.Stats.
type Entry struct {
	Dimension   string
	DimensionID string
	// Attrs holds one value per attribute name the blob is encoded or decoded with, nil
	// where the key carries none.
	Attrs []*string
	// Stats is a serialized window.Stats.
	Stats []byte
}

// Blob is what a stored row holds in one value: for a compact partial row the entries of
// one (window, source); for a folded row every key's merged stats and the sources merged
// into them.
type Blob struct {
	// Sources are in (topic, partition) order, distinct; empty for a compact partial row.
	Sources []sink.TopicPartition
	// Entries are ordered by (dimension, dimension id), distinct.
	Entries []Entry
}

// compareEntries orders entries by dimension, then dimension id.
func compareEntries(a, b *Entry) int {
	return cmp.Or(cmp.Compare(a.Dimension, b.Dimension), cmp.Compare(a.DimensionID, b.DimensionID))
}

// Encode appends the canonical encoding of b to dst: the version byte, the compression
// byte, then, compressed past a size, the attribute names,
// the sources, then the entries, each string after the shared prefix with the previous
// entry's (keys sorted by dimension and id repeat long prefixes). Each entry's Attrs must
// have len(attrs) elements. Equal blobs give identical bytes, from any Codec;
// [Codec.Decode] accepts exactly what Encode writes.
func (z *Codec) Encode(dst []byte, attrs []string, b Blob) ([]byte, error) {
	raw, err := encodeRaw(nil, attrs, b)
	if err != nil {
		return nil, err
	}
	return z.appendCompressed(dst, raw), nil
}

// appendCompressed appends the blob of an uncompressed encoding: its version and
// compression bytes, and raw, compressed past compressFrom bytes.
func (z *Codec) appendCompressed(dst, raw []byte) []byte {
	if len(raw) < compressFrom {
		return append(append(dst, Version, compressNone), raw...)
	}
	return z.enc.EncodeAll(raw, append(dst, Version, compressZstd))
}

// encodeRaw appends the uncompressed encoding of b.
func encodeRaw(dst []byte, attrs []string, b Blob) ([]byte, error) {
	w := newEntryWriter(attrs, len(b.Entries))
	for i := range b.Entries {
		if err := w.add(&b.Entries[i]); err != nil {
			return nil, err
		}
	}
	return w.appendRaw(dst, b.Sources)
}

// entryWriter encodes a blob's entries one at a time, so that a blob of many keys can be
// written without holding them all: what it keeps is their encoding.
type entryWriter struct {
	attrs   []string
	n       int
	prev    Entry
	bitmap  []byte
	entries []byte
}

// newEntryWriter returns a writer for entries with attrs, sized for about n of them.
func newEntryWriter(attrs []string, n int) *entryWriter {
	return &entryWriter{attrs: attrs, bitmap: make([]byte, (len(attrs)+7)/8), entries: make([]byte, 0, n*16)}
}

// add encodes e, which must follow the entries added before in key order. The writer keeps
// a copy of nothing but e's strings, which the next entry's prefix is taken from.
func (w *entryWriter) add(e *Entry) error {
	if w.n > 0 && compareEntries(&w.prev, e) >= 0 {
		return fmt.Errorf("fold: encode: entry %s/%s out of order", e.Dimension, e.DimensionID)
	}
	if len(e.Attrs) != len(w.attrs) {
		return fmt.Errorf("fold: encode: entry %s/%s has %d attributes, want %d", e.Dimension, e.DimensionID, len(e.Attrs), len(w.attrs))
	}
	if len(e.Stats) == 0 {
		return fmt.Errorf("fold: encode: entry %s/%s without stats", e.Dimension, e.DimensionID)
	}
	dst := appendSuffix(w.entries, w.prev.Dimension, e.Dimension)
	dst = appendSuffix(dst, w.prev.DimensionID, e.DimensionID)
	clear(w.bitmap)
	for j, a := range e.Attrs {
		if a != nil {
			w.bitmap[j/8] |= 1 << (j % 8)
		}
	}
	dst = append(dst, w.bitmap...)
	for _, a := range e.Attrs {
		if a != nil {
			dst = appendString(dst, *a)
		}
	}
	dst = binary.AppendUvarint(dst, uint64(len(e.Stats)))
	w.entries = append(dst, e.Stats...)
	w.prev = Entry{Dimension: e.Dimension, DimensionID: e.DimensionID}
	w.n++
	return nil
}

// appendRaw appends the uncompressed encoding of a blob of sources and the entries added.
func (w *entryWriter) appendRaw(dst []byte, sources []sink.TopicPartition) ([]byte, error) {
	if !slices.IsSortedFunc(sources, merge.CompareSources) {
		return nil, fmt.Errorf("fold: encode: sources out of order")
	}
	dst = binary.AppendUvarint(dst, uint64(len(w.attrs)))
	for _, a := range w.attrs {
		dst = appendString(dst, a)
	}
	dst = binary.AppendUvarint(dst, uint64(len(sources)))
	for i, s := range sources {
		if i > 0 && s == sources[i-1] || s.Partition < 0 {
			return nil, fmt.Errorf("fold: encode: source %s twice or negative", s)
		}
		dst = appendString(dst, s.Topic)
		dst = binary.AppendUvarint(dst, uint64(s.Partition))
	}
	dst = binary.AppendUvarint(dst, uint64(w.n))
	return append(dst, w.entries...), nil
}

// encode returns the blob of sources and the entries added, as z.Encode writes it.
func (w *entryWriter) encode(z *Codec, sources []sink.TopicPartition) ([]byte, error) {
	raw, err := w.appendRaw(nil, sources)
	if err != nil {
		return nil, err
	}
	return z.appendCompressed(nil, raw), nil
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// appendSuffix writes s as the length of its common prefix with prev and the rest.
func appendSuffix(dst []byte, prev, s string) []byte {
	n := commonPrefix(prev, s)
	dst = binary.AppendUvarint(dst, uint64(n))
	return appendString(dst, s[n:])
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// Decode parses a blob written by [Codec.Encode] and returns it with each entry's attributes
// rearranged to attrs: a name the blob lacks is nil in every entry, and a stored name
// missing from attrs is dropped. Input that is truncated, garbled or not canonical is
// rejected with an error wrapping [ErrCorrupt]. The stats are not decoded here.
func (z *Codec) Decode(data []byte, attrs []string) (Blob, error) {
	r, err := z.reader(data, attrs)
	if err != nil {
		return Blob{}, err
	}
	b := Blob{Sources: r.sources}
	if r.left > 0 {
		b.Entries = make([]Entry, r.left)
	}
	var backing []*string
	if len(attrs) > 0 {
		backing = make([]*string, len(b.Entries)*len(attrs))
	}
	for i := range b.Entries {
		if !r.next(&b.Entries[i], backing[i*len(attrs):(i+1)*len(attrs):(i+1)*len(attrs)]) {
			break
		}
	}
	if r.d.err != nil {
		return Blob{}, r.d.err
	}
	return b, nil
}

// entryReader reads the entries of a blob one at a time, in order, with the checks of
// [Codec.Decode]: a caller that reads them as it needs them holds one entry decoded, not the
// blob's every entry. Its error, once set, wraps [ErrCorrupt].
type entryReader struct {
	d       decoder
	sources []sink.TopicPartition
	pos     []int // where each stored attribute goes in the caller's attrs, -1: dropped
	left    int   // entries not read yet
	n       int   // entries read
	prev    Entry // the strings of the entry read last, which the next one's prefixes refer to
}

// reader decompresses data and reads the blob's header: its attributes and sources. Its
// entries are read with next.
func (z *Codec) reader(data []byte, attrs []string) (*entryReader, error) {
	if len(data) < 2 || data[0] != Version {
		return nil, corrupt("missing or unknown version byte")
	}
	raw := data[2:]
	switch data[1] {
	case compressNone:
		if len(raw) >= compressFrom {
			return nil, corrupt("%d uncompressed bytes, want fewer than %d", len(raw), compressFrom)
		}
	case compressZstd:
		var err error
		if raw, err = z.dec.DecodeAll(raw, nil); err != nil {
			return nil, corrupt("zstd: %v", err)
		}
		if len(raw) < compressFrom {
			return nil, corrupt("%d compressed bytes, want at least %d", len(raw), compressFrom)
		}
	default:
		return nil, corrupt("compression %d", data[1])
	}
	return readHeader(raw, attrs)
}

// readHeader reads the attributes, sources and entry count of an uncompressed blob.
func readHeader(data []byte, attrs []string) (*entryReader, error) {
	r := &entryReader{d: decoder{p: data}}
	d := &r.d
	na := d.count(1)
	stored := make([]string, na)
	r.pos = make([]int, na)
	for i := range stored {
		stored[i] = d.str()
		r.pos[i] = slices.Index(attrs, stored[i])
		if d.err == nil && slices.Contains(stored[:i], stored[i]) {
			d.fail("attribute %q twice", stored[i])
		}
	}
	ns := d.count(2)
	if ns > 0 {
		r.sources = make([]sink.TopicPartition, ns)
	}
	for i := range ns {
		s := sink.TopicPartition{Topic: d.str()}
		p := d.uvarint()
		if p > math.MaxInt32 {
			d.fail("partition %d out of range", p)
		}
		s.Partition = int32(p)
		if i > 0 && d.err == nil && merge.CompareSources(r.sources[i-1], s) >= 0 {
			d.fail("source %s out of order", s)
		}
		r.sources[i] = s
	}
	r.left = d.count(4 + (na+7)/8)
	if r.left == 0 {
		r.end()
	}
	if d.err != nil {
		return nil, d.err
	}
	return r, nil
}

// next reads the next entry into e, its attributes into slots (as many as the caller's
// attrs, cleared here). It returns false, leaving e as it is, once every entry was read or
// the blob is found corrupt (then r.d.err is set).
func (r *entryReader) next(e *Entry, slots []*string) bool {
	d := &r.d
	if r.left == 0 || d.err != nil {
		return false
	}
	clear(slots)
	var x Entry
	x.Dimension = d.suffix(r.prev.Dimension)
	x.DimensionID = d.suffix(r.prev.DimensionID)
	if r.n > 0 && d.err == nil && compareEntries(&r.prev, &x) >= 0 {
		d.fail("entry %d out of order", r.n)
	}
	if len(slots) > 0 {
		x.Attrs = slots
	}
	d.attrs(&x, r.pos)
	n := d.count(1)
	if n == 0 && d.err == nil {
		d.fail("entry %d without stats", r.n)
	}
	x.Stats = d.bytes(n)
	if d.err != nil {
		return false
	}
	r.prev = Entry{Dimension: x.Dimension, DimensionID: x.DimensionID}
	r.n++
	r.left--
	if r.left == 0 {
		r.end()
	}
	*e = x
	return d.err == nil
}

// end checks that nothing follows the last entry.
func (r *entryReader) end() {
	if r.d.err == nil && len(r.d.p) != 0 {
		r.d.fail("%d bytes after the last entry", len(r.d.p))
	}
}

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

// decoder reads a blob; after the first error every read returns a zero value.
type decoder struct {
	p   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = corrupt(format, args...)
	}
	d.p = nil
}

// uvarint reads a minimal unsigned varint, so that every accepted input re-encodes to itself.
func (d *decoder) uvarint() uint64 {
	x, k := binary.Uvarint(d.p)
	if k <= 0 || k != len(binary.AppendUvarint(nil, x)) {
		d.fail("bad varint")
		return 0
	}
	d.p = d.p[k:]
	return x
}

// count reads a count of items each at least min bytes long, bounded by what is left.
func (d *decoder) count(minSize int) int {
	n := d.uvarint()
	if n > uint64(len(d.p)/minSize) {
		d.fail("count %d exceeds the %d bytes left", n, len(d.p))
		return 0
	}
	return int(n)
}

func (d *decoder) bytes(n int) []byte {
	if n > len(d.p) {
		d.fail("truncated")
		return nil
	}
	out := d.p[:n:n]
	d.p = d.p[n:]
	return out
}

func (d *decoder) str() string { return string(d.bytes(d.count(1))) }

// suffix reads a string written by appendSuffix after prev.
func (d *decoder) suffix(prev string) string {
	n := d.uvarint()
	if n > uint64(len(prev)) {
		d.fail("shared prefix %d longer than %d", n, len(prev))
		return ""
	}
	rest := d.str()
	if rest != "" && int(n) < len(prev) && rest[0] == prev[n] {
		d.fail("shared prefix %d not the longest", n)
	}
	return prev[:n] + rest
}

// attrs reads an entry's presence bitmap and attribute values into e.Attrs, by pos.
func (d *decoder) attrs(e *Entry, pos []int) {
	bitmap := d.bytes((len(pos) + 7) / 8)
	if d.err != nil {
		return
	}
	if k := len(pos) % 8; k != 0 && bitmap[len(bitmap)-1]>>k != 0 {
		d.fail("unused presence bits set")
		return
	}
	for j, at := range pos {
		if bitmap[j/8]&(1<<(j%8)) == 0 {
			continue
		}
		v := d.str()
		if at >= 0 {
			e.Attrs[at] = &v
		}
	}
}
