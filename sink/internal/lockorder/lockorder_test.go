package lockorder

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/streamledger/streamledger/sink"
)

// State rows go out ordered by FNV-1a of the key's tagged bytes, then by the key: the same
// order from any input order, in every process (the hash has no seed).
func TestRowsIsOneOrderForEveryWriter(t *testing.T) {
	var rows []sink.StateRow
	for i := range 300 {
		key := []any{fmt.Sprint("veh-", i%100), int64(i / 100)}
		if i%50 == 0 {
			key = []any{time.Unix(int64(i), 0).UTC(), int32(i)}
		}
		rows = append(rows, sink.StateRow{Key: key})
	}
	want := Rows(slices.Clone(rows))
	assert.ElementsMatch(t, rows, want, "Rows must only reorder")
	for seed := range uint64(5) {
		shuffled := slices.Clone(rows)
		rand.New(rand.NewPCG(seed, 1)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		got := Rows(shuffled)
		assert.Equal(t, want, got, "seed %d", seed)
		assert.Same(t, &shuffled[0], &got[0], "seed %d: Rows must sort in place", seed)
	}
	for i := 1; i < len(want); i++ {
		a, b := Hash(want[i-1].Key), Hash(want[i].Key)
		assert.True(t, a < b || a == b && Compare(want[i-1].Key, want[i].Key) <= 0, "row %d", i)
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte("sveh-7\x00i"))
	_, _ = h.Write([]byte{0, 0, 0, 0, 0, 0, 0, 2})
	assert.Equal(t, h.Sum64(), Hash([]any{"veh-7", int64(2)}), "the hash never changes")
}

// BenchmarkRows orders a 40,000-row state batch (a 100x tick's positions): by hash, as
// Rows does, and by the boxed key values.
func BenchmarkRows(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	rows := make([]sink.StateRow, 40000)
	for i := range rows {
		rows[i] = sink.StateRow{Key: []any{fmt.Sprintf("veh-%06d", rng.IntN(140000))}}
	}
	b.Run("hash", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]sink.StateRow, len(rows))
		for b.Loop() {
			copy(buf, rows)
			Rows(buf)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(rows)), "ns/row")
	})
	b.Run("key", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]sink.StateRow, len(rows))
		for b.Loop() {
			copy(buf, rows)
			slices.SortFunc(buf, func(x, y sink.StateRow) int { return Compare(x.Key, y.Key) })
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(rows)), "ns/row")
	})
}
