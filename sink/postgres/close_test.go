package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/sinktest"
)

// A replayed batch of a folded window writes no partial but still records its progress.
func TestReplayedBatchRecordsProgress(t *testing.T) {
	ctx := testCtx(t)
	s, _ := newSink(t, nil)
	b := closeBatch(t, 0, 1, 2)
	require.NoError(t, s.WriteClose(ctx, b))
	later := b
	later.ClosedThrough = b.ClosedThrough.Add(time.Hour)
	require.NoError(t, s.WriteClose(ctx, later))
	got, err := s.ClosedThrough(context.WithoutCancel(ctx), b.Source)
	require.NoError(t, err)
	assert.Equal(t, later.ClosedThrough, got[b.Source])
}

// A gated close commits only when its gate allows, once its writes are made: while the gate
// runs nothing of the call is visible to other connections; a refusal rolls the call back, is
// not retried (also when it wraps a transient error), and the call's error wraps it.
func TestWriteCloseGated(t *testing.T) {
	ctx := testCtx(t)
	s, _ := newSink(t, nil)
	b := closeBatch(t, 0, 1, 2)
	refusal := fmt.Errorf("a state write failed: %w", &pgconn.PgError{Code: "40001"})
	calls := 0
	err := s.WriteCloseGated(ctx, func(ctx context.Context) error {
		calls++
		got, err := s.ClosedThrough(ctx, b.Source)
		require.NoError(t, err)
		assert.Empty(t, got, "nothing visible before the commit")
		return refusal
	}, b)
	require.ErrorIs(t, err, refusal)
	assert.Equal(t, 1, calls, "a refusal is not retried")
	got, err := s.ClosedThrough(ctx, b.Source)
	require.NoError(t, err)
	assert.Empty(t, got, "rolled back")

	require.NoError(t, s.WriteCloseGated(ctx, func(context.Context) error { calls++; return nil }, b))
	assert.Equal(t, 2, calls)
	got, err = s.ClosedThrough(ctx, b.Source)
	require.NoError(t, err)
	assert.Equal(t, b.ClosedThrough, got[b.Source])
}

// Two writers of the same partition (a processor and its zombie after a rebalance) write
// the same batches at once: the lock orders them, the later one finds its windows folded and
// changes nothing; both succeed and the rows are those of one write.
func TestSamePartitionWrittenTwiceAtOnce(t *testing.T) {
	ctx := testCtx(t)
	const windows, keys = 3, 300
	bs := batches(t, 7, 2, windows, keys)
	single, _ := newSink(t, nil)
	register(t, single, 2)
	for _, pb := range bs {
		for _, b := range pb {
			require.NoError(t, single.WriteClose(ctx, b))
		}
	}
	want := readWindows(t, ctx, single, windows)

	s, _ := newSink(t, nil)
	register(t, s, 2)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for w := range errs {
		wg.Go(func() {
			for _, b := range bs[w%2] {
				if err := s.WriteClose(ctx, b); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	assert.Equal(t, want, readWindows(t, ctx, s, windows))
}

// A large window folded by one partition and folded again when a second one, never
// registered before, writes every key of it: the merged rows are those of both. A merged row
// deleted behind the sink's back is written again by the refold.
func TestRefoldOfLargeWindow(t *testing.T) {
	const keys = 1300
	start := sinkfixture.Start()
	end := start.Add(5 * time.Minute)
	batch := func(p int32, vals ...float64) sink.CloseBatch {
		b := sink.CloseBatch{Source: sink.TopicPartition{Topic: sinkfixture.Topic, Partition: p}, ClosedThrough: end}
		for k := range keys {
			b.Partials = append(b.Partials, sink.Partial{Key: sink.Key{WindowStart: start, Dimension: "stop", DimensionID: fmt.Sprintf("S%05d", k)},
				WindowEnd: end, Stats: sinkfixture.Stats(t, append(vals, float64(k))...)})
		}
		return b
	}
	first, second := batch(0, 1, 2), batch(1, 3)
	mem, err := sinktest.NewMemory(sinktest.MemoryConfig{Aggregates: sinkfixture.Aggregates(), Clock: sinkfixture.Now})
	require.NoError(t, err)
	for _, b := range []sink.CloseBatch{first, second} {
		require.NoError(t, mem.WriteClose(testCtx(t), b))
	}
	want, err := mem.Aggregates(testCtx(t), start)
	require.NoError(t, err)
	for name, tamper := range map[string]string{
		"untouched":                       "",
		"merged row of the last key gone": fmt.Sprintf(`DELETE FROM aggregates WHERE dimension_id = 'S%05d'`, keys-1),
	} {
		t.Run(name, func(t *testing.T) {
			ctx := testCtx(t)
			s, db := newSink(t, nil)
			require.NoError(t, s.WriteClose(ctx, first))
			if tamper != "" {
				_, err := db.Pool.Exec(ctx, tamper)
				require.NoError(t, err)
			}
			require.NoError(t, s.WriteClose(ctx, second))
			got, err := s.Aggregates(ctx, start)
			require.NoError(t, err)
			require.Len(t, got, keys)
			for i := range got {
				got[i].Complete, want[i].Complete = false, false
			}
			assert.Equal(t, want, got)
		})
	}
}

// A gate runs under the close lock: a close of the same table by another sink waits for it,
// and is written after the gated call.
func TestGateHoldsTheCloseLock(t *testing.T) {
	s, db := newSink(t, nil)
	sinkfixture.GateHoldsCloses(t, testCtx(t), s, newSinkOn(t, db, nil), closeBatch(t, 0, 1), closeBatch(t, 1, 2))
}
