package postgres_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/faults"
	"github.com/streamledger/streamledger/internal/pgtest"
	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/postgres"
)

// TestHooksReportWrites checks what the sink reports for each kind of write: compact rows
// of a window not complete yet, the fold that completes it, a replay, a retried attempt,
// a failed call and state rows.
func TestHooksReportWrites(t *testing.T) {
	ctx := testCtx(t)
	db := pgtest.New(t)
	r := &sinkfixture.Hooks{}
	var failNext, failHard atomic.Bool
	s := newSinkOn(t, db, func(c *postgres.Config) {
		c.Hooks = []sink.Hook{r}
	})
	ctx = faults.With(ctx, func(_ context.Context, p faults.Point, _ faults.Attempt) error {
		switch {
		case p != faults.BeforeCommit:
		case failHard.Load():
			return errors.New("refused")
		case failNext.CompareAndSwap(true, false):
			return &pgconn.PgError{Code: "40001", Message: "could not serialize access"}
		}
		return nil
	})
	p0, p1 := sink.TopicPartition{Topic: sinkfixture.Topic, Partition: 0}, sink.TopicPartition{Topic: sinkfixture.Topic, Partition: 1}
	require.NoError(t, s.WriteClose(ctx, sink.CloseBatch{Source: p0}, sink.CloseBatch{Source: p1}))
	require.NoError(t, s.WriteClose(ctx, closeBatch(t, 0, 1, 2)))
	failNext.Store(true)
	require.NoError(t, s.WriteClose(ctx, closeBatch(t, 1, 3)))
	require.NoError(t, s.WriteClose(ctx, closeBatch(t, 1, 3)))
	failHard.Store(true)
	require.Error(t, s.WriteClose(ctx, closeBatch(t, 1, 3)))
	failHard.Store(false)
	at := sinkfixture.Start()
	require.NoError(t, s.UpsertLatest(ctx, tableRows(sinkfixture.StateTable, []sink.StateRow{
		{Key: []any{"v1"}, ObservedAt: at, Values: []any{"t", 1.0, int64(1)}},
		{Key: []any{"v1"}, ObservedAt: at.Add(time.Second), Values: []any{"t", 2.0, int64(2)}},
		{Key: []any{"v2"}, ObservedAt: at, Values: []any{"t", 3.0, int64(1)}},
	})))

	assert.Equal(t, []sink.WriteCloseInfo{
		{Batches: 2, Progress: 2, Attempts: 1},
		{Batches: 1, Partials: 1, Compact: 1, Progress: 1, Attempts: 1},
		{Batches: 1, Partials: 1, Merged: 1, Folded: 1, Progress: 1, Attempts: 2},
		{Batches: 1, Partials: 1, Ignored: 1, Attempts: 1},
		{Batches: 1, Partials: 1, Attempts: 1, Err: r.Closes()[4].Err},
	}, r.Closes())
	assert.Error(t, r.Closes()[4].Err, "a failed call is reported with its error")
	assert.Equal(t, []sink.UpsertLatestInfo{{Table: sinkfixture.StateTable, Rows: 2, Attempts: 1}}, r.Upserts())
}

func TestHooksRefusedAtNew(t *testing.T) {
	db := pgtest.New(t)
	_, err := postgres.New(db.Pool, postgres.Config{Schema: db.Schema, Aggregates: sinkfixture.Aggregates(),
		Hooks: []sink.Hook{&sinkfixture.Hooks{}, struct{}{}}})
	require.ErrorIs(t, err, sink.ErrConfig)
	assert.ErrorContains(t, err, "Config.Hooks[1]")
}
