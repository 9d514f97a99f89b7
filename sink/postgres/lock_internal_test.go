package postgres

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/streamledger/streamledger/sink"
)

// The bucket of a key is FNV-1a of its window start, dimension, a zero byte and dimension
// id: writers of different versions must agree on it, or they would not exclude each other.
func TestLockBucketsAreFNV1a(t *testing.T) {
	s := &Sink{cfg: Config{LockBuckets: 256}}
	var ps []sink.Partial
	want := map[int32]bool{}
	for i := range 500 {
		k := sink.Key{WindowStart: time.Date(2026, 3, 2, 7, i%7*5, 0, 0, time.UTC), Dimension: fmt.Sprint("d", i%3), DimensionID: fmt.Sprint("id-", i)}
		ps = append(ps, sink.Partial{Key: k})
		h := fnv.New64a()
		var ts [8]byte
		binary.BigEndian.PutUint64(ts[:], uint64(k.WindowStart.UnixNano()))
		_, _ = h.Write(ts[:])
		_, _ = h.Write([]byte(k.Dimension))
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(k.DimensionID))
		want[int32(h.Sum64()%256)] = true
	}
	got := s.lockBuckets(ps)
	assert.True(t, slices.IsSorted(got))
	assert.Len(t, got, len(want))
	for _, b := range got {
		assert.True(t, want[b], "bucket %d", b)
	}
}
