package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/pgtest"
	"github.com/streamledger/streamledger/sink"
)

// chunkOf returns merged rows of window start, one per id, each with count 1.
func chunkOf(start time.Time, ids ...string) *mergedRows {
	m := newMergedRows(len(ids), 0, start)
	for _, id := range ids {
		m.add(sink.Key{WindowStart: start, Dimension: "line", DimensionID: id}, start.Add(5*time.Minute), nil,
			sink.Summary{Count: 1, Mean: 1, Quantile: 1, Max: 1, Min: 1})
	}
	return m
}

// The copy of merged rows takes chunks while it streams them, ends at finish, and reports
// how it ended: rows copied, a row that exists, a cancelled context, or chunks sent after
// it ended. It never leaves its goroutine behind on the transaction.
func TestMergedCopy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := pgtest.New(t)
	s, err := New(db.Pool, Config{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, s.Migrate(ctx))
	start := time.Date(2026, 3, 2, 7, 0, 0, 0, time.UTC)
	ids := func(from, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("l%06d", from+i)
		}
		return out
	}
	inTx := func(fn func(ctx context.Context, tx pgx.Tx) error) error {
		return pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error { return fn(ctx, tx) })
	}

	require.NoError(t, inTx(func(ctx context.Context, tx pgx.Tx) error {
		c := s.startCopy(ctx, tx)
		for k := range 3 {
			require.NoError(t, c.send(chunkOf(start, ids(k*1000, 1000)...)))
		}
		require.NoError(t, c.finish())
		require.NoError(t, c.finish(), "finish again: the same outcome")
		assert.ErrorContains(t, c.send(chunkOf(start, "late")), "after the copy of 3000 rows ended")
		return nil
	}))
	got, err := s.Aggregates(ctx, start)
	require.NoError(t, err)
	assert.Len(t, got, 3000)

	err = inTx(func(ctx context.Context, tx pgx.Tx) error {
		c := s.startCopy(ctx, tx)
		var err error
		for k := 0; err == nil && k < 50; k++ {
			from := 3000 + k*1000
			if k == 9 {
				from = 0 // rows copied by the first transaction
			}
			err = c.send(chunkOf(start, ids(from, 1000)...))
		}
		if ferr := c.finish(); err == nil {
			err = ferr
		}
		return err
	})
	require.Error(t, err)
	assert.True(t, isUniqueViolation(err), "the unique violation is reported: %v", err)

	cctx, ccancel := context.WithCancel(ctx)
	err = pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		c := s.startCopy(cctx, tx)
		require.NoError(t, c.send(chunkOf(start.Add(time.Hour), ids(0, 10)...)))
		ccancel()
		return c.finish()
	})
	assert.ErrorIs(t, err, context.Canceled)
}
