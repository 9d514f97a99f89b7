package mysql_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/faults"
	"github.com/streamledger/streamledger/internal/mytest"
	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/sink"
)

// kill ends the server connection id from another connection.
func kill(ctx context.Context, t *testing.T, db *mytest.DB, id int64) {
	t.Helper()
	_, err := db.DB.ExecContext(ctx, "KILL CONNECTION ?", id)
	require.NoError(t, err)
}

func closeBatch(t *testing.T, p int32, values ...float64) sink.CloseBatch {
	start := sinkfixture.Start()
	end := start.Add(5 * time.Minute)
	return sink.CloseBatch{Source: sink.TopicPartition{Topic: sinkfixture.Topic, Partition: p}, ClosedThrough: end,
		Partials: []sink.Partial{{Key: sink.Key{WindowStart: start, Dimension: "line", DimensionID: "1"}, WindowEnd: end, Stats: sinkfixture.Stats(t, values...)}}}
}

// The sink's connection is killed by the server at a point of the first attempt, or the
// attempt fails with a deadlock; the retry commits the batch once.
func TestRetryWriteClose(t *testing.T) {
	for _, tc := range []struct {
		name  string
		point faults.Point
		fail  func(ctx context.Context, t *testing.T, db *mytest.DB, a faults.Attempt) error
	}{
		{"killed before commit", faults.BeforeCommit, func(ctx context.Context, t *testing.T, db *mytest.DB, a faults.Attempt) error {
			kill(ctx, t, db, a.Conn)
			return nil
		}},
		{"killed after commit", faults.AfterCommit, func(ctx context.Context, t *testing.T, db *mytest.DB, a faults.Attempt) error {
			kill(ctx, t, db, a.Conn)
			// The commit landed but its acknowledgement is "lost": the caller cannot tell.
			return &gomysql.MySQLError{Number: 2013, Message: "Lost connection to server during query"}
		}},
		{"deadlock", faults.BeforeCommit, func(context.Context, *testing.T, *mytest.DB, faults.Attempt) error {
			return &gomysql.MySQLError{Number: 1213, Message: "Deadlock found when trying to get lock; try restarting transaction"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			s, db := newSink(t, nil)
			var attempts []int
			var failed atomic.Bool
			ctx = faults.With(ctx, func(ctx context.Context, p faults.Point, a faults.Attempt) error {
				if p == faults.BeforeBegin {
					attempts = append(attempts, a.N)
				}
				if p == tc.point && a.Op == "write close" && failed.CompareAndSwap(false, true) {
					return tc.fail(ctx, t, db, a)
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

// A state upsert survives a killed connection the same way.
func TestRetryUpsertLatestAfterKill(t *testing.T) {
	ctx := testCtx(t)
	s, db := newSink(t, nil)
	var killed atomic.Bool
	var attempts atomic.Int32
	ctx = faults.With(ctx, func(ctx context.Context, p faults.Point, a faults.Attempt) error {
		if p == faults.BeforeBegin {
			attempts.Add(1)
		}
		if p == faults.BeforeCommit && a.Op == "upsert latest" && killed.CompareAndSwap(false, true) {
			kill(ctx, t, db, a.Conn)
		}
		return nil
	})
	at := sinkfixture.Start()
	row := sink.StateRow{Table: sinkfixture.StateTable, Key: []any{"bus-1"}, ObservedAt: at, Values: []any{"t", 1.5, int64(7)}}
	require.NoError(t, s.UpsertLatest(ctx, []sink.StateRow{row}))
	assert.Equal(t, int32(2), attempts.Load())
	got, ok, err := s.Latest(ctx, sinkfixture.StateTable, "bus-1")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, row, got)
}

// A failure that is not transient is returned at once, and nothing of the call is written.
func TestNoRetryOfPermanentFailure(t *testing.T) {
	ctx := testCtx(t)
	s, _ := newSink(t, nil)
	var attempts atomic.Int32
	ctx = faults.With(ctx, func(ctx context.Context, p faults.Point, a faults.Attempt) error {
		if p == faults.BeforeBegin {
			attempts.Add(1)
		}
		if p == faults.BeforeCommit {
			return &gomysql.MySQLError{Number: 1146, Message: "Table doesn't exist"}
		}
		return nil
	})
	b := closeBatch(t, 0, 1)
	require.Error(t, s.WriteClose(ctx, b))
	assert.Equal(t, int32(1), attempts.Load())
	progress, err := s.ClosedThrough(context.Background(), b.Source)
	require.NoError(t, err)
	assert.Empty(t, progress, "the failed attempt rolled back")
}
