package mysql_test

import (
	"context"
	"sync/atomic"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/faults"
	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/mysql"
)

// The hooks see what each call's committed transaction wrote, and its attempts.
func TestHooksReportWrites(t *testing.T) {
	ctx := testCtx(t)
	r := &sinkfixture.Hooks{}
	s, _ := newSink(t, func(c *mysql.Config) { c.Hooks = []sink.Hook{r} })
	var deadlock atomic.Bool
	ctx = faults.With(ctx, func(_ context.Context, p faults.Point, _ faults.Attempt) error {
		if p == faults.BeforeCommit && deadlock.CompareAndSwap(true, false) {
			return &gomysql.MySQLError{Number: 1213, Message: "Deadlock found"}
		}
		return nil
	})
	register := []sink.CloseBatch{{Source: sink.TopicPartition{Topic: sinkfixture.Topic, Partition: 0}}, {Source: sink.TopicPartition{Topic: sinkfixture.Topic, Partition: 1}}}
	require.NoError(t, s.WriteClose(ctx, register...))
	require.NoError(t, s.WriteClose(ctx, closeBatch(t, 0, 1, 2)))
	deadlock.Store(true)
	require.NoError(t, s.WriteClose(ctx, closeBatch(t, 1, 3)))
	require.NoError(t, s.WriteClose(ctx, closeBatch(t, 1, 3)), "a replay")
	assert.Equal(t, []sink.WriteCloseInfo{
		{Batches: 2, Progress: 2, Attempts: 1},
		{Batches: 1, Partials: 1, Compact: 1, Progress: 1, Attempts: 1},
		{Batches: 1, Partials: 1, Merged: 1, Folded: 1, Progress: 1, Attempts: 2},
		{Batches: 1, Partials: 1, Ignored: 1, Attempts: 1},
	}, r.Closes())

	at := sinkfixture.Start()
	row := func(id string) sink.StateRow {
		return sink.StateRow{Table: sinkfixture.StateTable, Key: []any{id}, ObservedAt: at, Values: []any{"t", 1.0, int64(1)}}
	}
	require.NoError(t, s.UpsertLatest(ctx, []sink.StateRow{row("a"), row("b"), row("a")}))
	bad := row("c")
	bad.Values = nil
	require.ErrorIs(t, s.UpsertLatest(ctx, []sink.StateRow{bad}), sink.ErrInvalid)
	require.Len(t, r.Upserts(), 2)
	assert.Equal(t, sink.UpsertLatestInfo{Table: sinkfixture.StateTable, Rows: 2, Attempts: 1}, r.Upserts()[0])
	assert.ErrorIs(t, r.Upserts()[1].Err, sink.ErrInvalid)
}
