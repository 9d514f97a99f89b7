package postgres

import (
	"hash/fnv"
	"testing"

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
