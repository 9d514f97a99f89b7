package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/pgtest"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/fold"
)

// The merged rows of a first fold go in with a plain INSERT; a row that exists after all
// makes the write roll back to its savepoint and upsert instead, with the same outcome.
func TestFoldFallsBackToUpsert(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := pgtest.New(t)
	s, err := New(db.Pool, Config{Schema: db.Schema, Aggregates: sink.AggregateSpec{Attributes: []string{"owner"}}})
	require.NoError(t, err)
	require.NoError(t, s.Migrate(ctx))
	start := time.Date(2026, 3, 2, 7, 0, 0, 0, time.UTC)
	gvb := "GVB"
	row := func(id string, count int64, attr *string) fold.Row {
		return fold.Row{Key: sink.Key{WindowStart: start, Dimension: "line", DimensionID: id}, End: start.Add(5 * time.Minute),
			Attrs: []*string{attr}, Summary: sink.Summary{Count: count, Mean: 1, Quantile: 1, Max: 1, Min: 1}}
	}
	write := func(p *fold.Plan) {
		t.Helper()
		require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error { return s.writePlan(ctx, tx, p, start) }))
	}
	write(&fold.Plan{Insert: []fold.Row{row("a", 1, &gvb)}})
	write(&fold.Plan{Insert: []fold.Row{row("b", 2, nil), row("a", 3, nil)}, Progress: []fold.Progress{{Source: sink.TopicPartition{Topic: "t"}, ClosedThrough: start}}})
	got, err := s.Aggregates(ctx, start)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, [2]int64{3, 2}, [2]int64{got[0].Count, got[1].Count}, "the existing row was replaced, the new one inserted")
	assert.Equal(t, map[string]string{"owner": "GVB"}, got[0].Attrs, "COALESCE kept the stored attribute")
	ct, err := s.ClosedThrough(ctx, sink.TopicPartition{Topic: "t"})
	require.NoError(t, err)
	assert.Equal(t, start, ct[sink.TopicPartition{Topic: "t"}], "the rest of the plan was written once")
}
