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

// terminate kills the server process pid from another connection and waits until it is gone.
func terminate(ctx context.Context, t *testing.T, db *pgtest.DB, pid int64) {
	t.Helper()
	var ok bool
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT pg_terminate_backend($1::int, 5000)", int32(pid)).Scan(&ok))
	require.True(t, ok, "backend %d terminated", pid)
}

func closeBatch(t *testing.T, p int32, values ...float64) sink.CloseBatch {
	start := sinkfixture.Start()
	end := start.Add(5 * time.Minute)
	return sink.CloseBatch{Source: sink.TopicPartition{Topic: sinkfixture.Topic, Partition: p}, ClosedThrough: end,
		Partials: []sink.Partial{{Key: sink.Key{WindowStart: start, Dimension: "line", DimensionID: "1"}, WindowEnd: end, Stats: sinkfixture.Stats(t, values...)}}}
}

// The sink's own connection is terminated by the server at each point of the first attempt;
// the retry on a fresh connection commits the batch once.
func TestRetryAfterConnectionTerminated(t *testing.T) {
	for _, point := range []faults.Point{faults.BeforeCommit, faults.AfterCommit} {
		t.Run(point.String(), func(t *testing.T) {
			ctx := testCtx(t)
			db := pgtest.New(t)
			var attempts []int
			var killed atomic.Bool
			s := newSinkOn(t, db, nil)
			ctx = faults.With(ctx, func(ctx context.Context, p faults.Point, a faults.Attempt) error {
				if p == faults.BeforeBegin {
					attempts = append(attempts, a.N)
				}
				if p == point && a.Op == "write close" && killed.CompareAndSwap(false, true) {
					terminate(ctx, t, db, a.Conn)
					if p == faults.AfterCommit {
						// The commit landed but its acknowledgement is "lost": the
						// caller cannot tell, so the attempt fails transiently.
						return &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}
					}
				}
				return nil
			})
			b := closeBatch(t, 0, 1, 2, 3)
			require.NoError(t, s.WriteClose(ctx, b))
			assert.Equal(t, []int{1, 2}, attempts, "one failed attempt, one retry")
			got, ok, err := s.Aggregate(ctx, b.Partials[0].Key)
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, int64(3), got.Count, "written once, whatever the first attempt left")
			progress, err := s.ClosedThrough(ctx, b.Source)
			require.NoError(t, err)
			assert.Equal(t, b.ClosedThrough, progress[b.Source])
		})
	}
}

// A state upsert survives a terminated connection the same way.
func TestRetryUpsertLatestAfterConnectionTerminated(t *testing.T) {
	ctx := testCtx(t)
	db := pgtest.New(t)
	var killed atomic.Bool
	s := newSinkOn(t, db, nil)
	ctx = faults.With(ctx, func(ctx context.Context, p faults.Point, a faults.Attempt) error {
		if p == faults.BeforeCommit && killed.CompareAndSwap(false, true) {
			terminate(ctx, t, db, a.Conn)
		}
		return nil
	})
	row := sink.StateRow{Table: sinkfixture.StateTable, Key: []any{"bus-1"}, ObservedAt: sinkfixture.Start(), Values: []any{"t", 2.5, int64(4)}}
	require.NoError(t, s.UpsertLatest(ctx, []sink.StateRow{row}))
	require.True(t, killed.Load())
	got, ok, err := s.Latest(ctx, sinkfixture.StateTable, "bus-1")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, row, got)
}

// When every attempt fails transiently the write reports a transient WriteError after the
// configured attempts, and nothing of it is stored.
func TestRetriesRunOut(t *testing.T) {
	ctx := testCtx(t)
	db := pgtest.New(t)
	var n atomic.Int32
	s := newSinkOn(t, db, func(c *postgres.Config) {
		c.Retry = sink.RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Millisecond}
	})
	ctx = faults.With(ctx, func(_ context.Context, p faults.Point, a faults.Attempt) error {
		if p == faults.BeforeCommit {
			n.Add(1)
			return &pgconn.PgError{Code: "40001", Message: "could not serialize access"}
		}
		return nil
	})
	b := closeBatch(t, 0, 1)
	err := s.WriteClose(ctx, b)
	var we *sink.WriteError
	require.ErrorAs(t, err, &we)
	assert.True(t, we.Transient)
	assert.Equal(t, 3, we.Attempts)
	assert.True(t, sink.IsTransient(err))
	assert.Equal(t, int32(3), n.Load())
	_, ok, err := s.Aggregate(ctx, b.Partials[0].Key)
	require.NoError(t, err)
	assert.False(t, ok, "a write that did not commit left nothing")
	progress, err := s.ClosedThrough(ctx, b.Source)
	require.NoError(t, err)
	assert.Empty(t, progress)
}

// Cancelling the context stops the backoff at once.
func TestRetryHonoursContext(t *testing.T) {
	db := pgtest.New(t)
	ctx, cancel := context.WithCancel(testCtx(t))
	s := newSinkOn(t, db, func(c *postgres.Config) {
		c.Retry = sink.RetryPolicy{MaxAttempts: 100, InitialBackoff: time.Hour}
	})
	ctx = faults.With(ctx, func(_ context.Context, p faults.Point, _ faults.Attempt) error {
		if p == faults.BeforeCommit {
			cancel()
			return &pgconn.PgError{Code: "40P01", Message: "deadlock detected"}
		}
		return nil
	})
	err := s.WriteClose(ctx, closeBatch(t, 0, 1))
	require.ErrorIs(t, err, context.Canceled)
	var we *sink.WriteError
	require.ErrorAs(t, err, &we)
	assert.Equal(t, 1, we.Attempts)
}

// A failure just before COMMIT rolls everything back and is reported.
func TestFailureBeforeCommitWritesNothing(t *testing.T) {
	ctx := testCtx(t)
	db := pgtest.New(t)
	boom := errors.New("injected")
	s := newSinkOn(t, db, nil)
	ctx = faults.With(ctx, func(_ context.Context, p faults.Point, _ faults.Attempt) error {
		if p == faults.BeforeCommit {
			return boom
		}
		return nil
	})
	b := closeBatch(t, 0, 1)
	err := s.WriteClose(ctx, b)
	require.ErrorIs(t, err, boom)
	assert.False(t, sink.IsTransient(err))
	var n int
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM aggregates) + (SELECT count(*) FROM aggregates_partials) + (SELECT count(*) FROM streamledger_progress)").Scan(&n))
	assert.Zero(t, n)
}
