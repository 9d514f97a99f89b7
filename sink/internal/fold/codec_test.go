package fold_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/fold"
)

var stats = sinkfixture.Stats

func str(s string) *string { return &s }

// blob returns a blob of n keys over two dimensions, every third with an operator.
func blob(t testing.TB, n int, sources ...sink.TopicPartition) fold.Blob {
	b := fold.Blob{Sources: sources}
	for i := range n {
		e := fold.Entry{Dimension: "line", DimensionID: fmt.Sprintf("GVB:%04d", i), Attrs: []*string{nil, nil}, Stats: stats(t, float64(i), float64(2*i))}
		if i >= n/2 {
			e.Dimension = "stop"
		}
		if i%3 == 0 {
			e.Attrs[0] = str(fmt.Sprint("OP", i%7))
		}
		b.Entries = append(b.Entries, e)
	}
	return b
}

var attrs = []string{"owner", "colour"}

func newCodec(tb testing.TB) *fold.Codec {
	z, err := fold.NewCodec()
	require.NoError(tb, err)
	return z
}

func TestBlobRoundTrip(t *testing.T) {
	z, other := newCodec(t), newCodec(t)
	srcs := []sink.TopicPartition{{Topic: "arrivals", Partition: 0}, {Topic: "arrivals", Partition: 7}, {Topic: "b", Partition: 1}}
	for name, b := range map[string]fold.Blob{
		"empty":                    {},
		"one key":                  blob(t, 1),
		"small, uncompressed":      blob(t, 5, srcs...),
		"large, compressed":        blob(t, 2000, srcs...),
		"entry whose id is prefix": {Entries: []fold.Entry{{Dimension: "a", DimensionID: "x", Attrs: make([]*string, 2), Stats: stats(t, 1)}, {Dimension: "a", DimensionID: "xy", Attrs: make([]*string, 2), Stats: stats(t, 2)}}},
	} {
		t.Run(name, func(t *testing.T) {
			enc, err := z.Encode(nil, attrs, b)
			require.NoError(t, err)
			got, err := z.Decode(enc, attrs)
			require.NoError(t, err)
			assert.Equal(t, len(b.Entries), len(got.Entries))
			for i := range b.Entries {
				assert.Equal(t, b.Entries[i], got.Entries[i])
			}
			assert.Equal(t, b.Sources, got.Sources)
			again, err := other.Encode(nil, attrs, got)
			require.NoError(t, err)
			assert.Equal(t, enc, again, "canonical: equal blobs, identical bytes, from any codec")
		})
	}
	enc, err := z.Encode(nil, attrs, blob(t, 2000))
	require.NoError(t, err)
	assert.Less(t, len(enc), 2000*20, "a large blob is compressed")
}

// Attributes are stored by name: decoding with another attribute list keeps the names it
// shares and drops the others.
func TestBlobAttributesByName(t *testing.T) {
	z := newCodec(t)
	b := blob(t, 9)
	b.Entries[1].Attrs[1] = str("red")
	enc, err := z.Encode(nil, attrs, b)
	require.NoError(t, err)
	got, err := z.Decode(enc, []string{"colour", "size"})
	require.NoError(t, err)
	assert.Equal(t, []*string{str("red"), nil}, got.Entries[1].Attrs)
	assert.Equal(t, []*string{nil, nil}, got.Entries[0].Attrs, "operator is not asked for")
	got, err = z.Decode(enc, nil)
	require.NoError(t, err)
	assert.Nil(t, got.Entries[0].Attrs)
}

func TestEncodeRefusesNonCanonical(t *testing.T) {
	z := newCodec(t)
	e := func(dim, id string) fold.Entry {
		return fold.Entry{Dimension: dim, DimensionID: id, Attrs: make([]*string, 2), Stats: stats(t, 1)}
	}
	for name, b := range map[string]fold.Blob{
		"entries out of order": {Entries: []fold.Entry{e("b", "1"), e("a", "1")}},
		"entry twice":          {Entries: []fold.Entry{e("a", "1"), e("a", "1")}},
		"sources out of order": {Sources: []sink.TopicPartition{{Topic: "b"}, {Topic: "a"}}},
		"negative partition":   {Sources: []sink.TopicPartition{{Topic: "a", Partition: -1}}},
		"attributes short":     {Entries: []fold.Entry{{Dimension: "a", Stats: stats(t, 1)}}},
		"no stats":             {Entries: []fold.Entry{{Dimension: "a", Attrs: make([]*string, 2)}}},
	} {
		_, err := z.Encode(nil, attrs, b)
		assert.Error(t, err, name)
	}
}

func TestDecodeRejectsCorrupt(t *testing.T) {
	z := newCodec(t)
	small, err := z.Encode(nil, attrs, blob(t, 2))
	require.NoError(t, err)
	large, err := z.Encode(nil, attrs, blob(t, 200))
	require.NoError(t, err)
	uncompressedLarge := []byte{fold.Version, 0}
	uncompressedLarge = append(uncompressedLarge, bytes.Repeat([]byte{0}, 600)...)
	// A shared prefix that is not the longest: "line"/"a" then "line"/"ab" written as
	// prefix 0 and suffix "ab" where prefix 1 and suffix "b" is canonical.
	var loose []byte
	loose = append(loose, fold.Version, 0, 0, 0, 2)
	st := stats(t, 1)
	loose = binary.AppendUvarint(loose, 0)
	loose = append(loose, 1, 'a', 0, 1, 'a')
	loose = append(loose, byte(len(st)))
	loose = append(loose, st...)
	loose = append(loose, 1, 0, 0, 2, 'a', 'b')
	loose = append(loose, byte(len(st)))
	loose = append(loose, st...)
	for name, data := range map[string][]byte{
		"nothing":               nil,
		"version":               append([]byte{2}, small[1:]...),
		"compression":           append([]byte{fold.Version, 9}, small[2:]...),
		"truncated":             small[:len(small)-1],
		"trailing byte":         append(bytes.Clone(small), 0),
		"large uncompressed":    uncompressedLarge,
		"garbled zstd":          append(bytes.Clone(large[:20]), bytes.Repeat([]byte{0xff}, 40)...),
		"longer prefix allowed": loose,
	} {
		_, err := z.Decode(data, attrs)
		assert.ErrorIs(t, err, fold.ErrCorrupt, name)
	}
}

// FuzzDecode: no input makes Decode panic or allocate without bound, and whatever it accepts
// re-encodes to a blob that decodes to the same entries (to the same bytes when the blob
// names the attributes as given).
func FuzzDecode(f *testing.F) {
	z := newCodec(f)
	for _, n := range []int{0, 1, 3, 40} {
		enc, err := z.Encode(nil, attrs, blob(f, n, sink.TopicPartition{Topic: "t", Partition: 2}))
		require.NoError(f, err)
		f.Add(enc)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := z.Decode(data, attrs)
		if err != nil {
			return
		}
		enc, err := z.Encode(nil, attrs, b)
		require.NoError(t, err)
		again, err := z.Decode(enc, attrs)
		require.NoError(t, err)
		assert.Equal(t, b, again)
		if bytes.HasPrefix(data, append([]byte{fold.Version, 0, 2, 8}, "operator\x06colour"...)) {
			assert.Equal(t, data, enc)
		}
	})
}
