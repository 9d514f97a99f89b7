package postgres

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/sink"
)

// The close lock's key is FNV-1a of a fixed prefix, the schema and the aggregates table:
// every writer of the same tables, in any process or release, must take the same lock, and
// writers of other tables another.
func TestCloseLockKey(t *testing.T) {
	key := func(schema, table string) int64 {
		s, err := New(&pgxpool.Pool{}, Config{Schema: schema, Aggregates: sink.AggregateSpec{Table: table}})
		require.NoError(t, err)
		return s.closeLock
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte("streamledger close\x00public\x00aggregates"))
	assert.Equal(t, int64(h.Sum64()), key("", "aggregates"))
	assert.Equal(t, key("s", "t"), key("s", "t"))
	assert.NotEqual(t, key("s", "t"), key("s", "u"))
	assert.NotEqual(t, key("s", "t"), key("u", "t"))
}

// State rows go out ordered by FNV-1a of the key's tagged bytes, then by the key: the same
// order from any input order, in every process (the hash has no seed).
func TestLockOrderIsOneOrderForEveryWriter(t *testing.T) {
	var rows []sink.StateRow
	for i := range 300 {
		key := []any{fmt.Sprint("veh-", i%100), int64(i / 100)}
		if i%50 == 0 {
			key = []any{time.Unix(int64(i), 0).UTC(), int32(i)}
		}
		rows = append(rows, sink.StateRow{Key: key})
	}
	want := lockOrder(rows)
	for seed := range uint64(5) {
		shuffled := slices.Clone(rows)
		rand.New(rand.NewPCG(seed, 1)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		assert.Equal(t, want, lockOrder(shuffled), "seed %d", seed)
	}
	for i := 1; i < len(want); i++ {
		a, b := keyHash(want[i-1].Key), keyHash(want[i].Key)
		assert.True(t, a < b || a == b && compareTuples(want[i-1].Key, want[i].Key) <= 0, "row %d", i)
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte("sveh-7\x00i"))
	_, _ = h.Write([]byte{0, 0, 0, 0, 0, 0, 0, 2})
	assert.Equal(t, h.Sum64(), keyHash([]any{"veh-7", int64(2)}), "the hash never changes")
}

// BenchmarkLockOrder orders a 40,000-row state batch (a 100x tick's positions): by hash, as
// UpsertLatest does, and by the boxed key values, as it did before the profile.
func BenchmarkLockOrder(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	rows := make([]sink.StateRow, 40000)
	for i := range rows {
		rows[i] = sink.StateRow{Key: []any{fmt.Sprintf("veh-%06d", rng.IntN(140000))}}
	}
	b.Run("hash", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			lockOrder(rows)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(rows)), "ns/row")
	})
	b.Run("key", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]sink.StateRow, len(rows))
		for b.Loop() {
			copy(buf, rows)
			slices.SortFunc(buf, func(x, y sink.StateRow) int { return compareTuples(x.Key, y.Key) })
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(rows)), "ns/row")
	})
}
