package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/pgtest"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/postgres"
	"github.com/streamledger/streamledger/sink/sinktest"
)

// batches returns, per partition, close batches for windows windows over keys keys.
func batches(t testing.TB, seed uint64, partitions, windows, keys int) [][]sink.CloseBatch {
	r := rand.New(rand.NewPCG(seed, 3))
	out := make([][]sink.CloseBatch, partitions)
	for p := range partitions {
		for w := range windows {
			start := sinktest.T0().Add(time.Duration(w) * 5 * time.Minute)
			end := start.Add(5 * time.Minute)
			b := sink.CloseBatch{Source: sink.TopicPartition{Topic: sinktest.Topic, Partition: int32(p)}, ClosedThrough: end}
			for k := range keys {
				vals := make([]float64, 1+r.IntN(8))
				for i := range vals {
					vals[i] = float64(r.IntN(900))
				}
				b.Partials = append(b.Partials, sink.Partial{Key: sink.Key{WindowStart: start, Dimension: "stop", DimensionID: fmt.Sprint(k)},
					WindowEnd: end, Stats: sinktest.Stats(t, vals...)})
			}
			out[p] = append(out[p], b)
		}
	}
	return out
}

func readWindows(t *testing.T, ctx context.Context, s *postgres.Sink, windows int) []sink.Aggregate {
	var out []sink.Aggregate
	for w := range windows {
		rows, err := s.Aggregates(ctx, sinktest.T0().Add(time.Duration(w)*5*time.Minute))
		require.NoError(t, err)
		out = append(out, rows...)
	}
	return out
}

// Two processes (two sinks, two pools) write different partitions of the same keys at once;
// the merged rows equal a single writer's.
func TestTwoProcessesWriteTheSameKeys(t *testing.T) {
	ctx := testCtx(t)
	const partitions, windows, keys = 4, 3, 300
	bs := batches(t, 1, partitions, windows, keys)

	single, _ := newSink(t, nil)
	for _, pb := range bs {
		for _, b := range pb {
			require.NoError(t, single.WriteClose(ctx, b))
		}
	}
	want := readWindows(t, ctx, single, windows)
	require.Len(t, want, windows*keys)

	db := pgtest.New(t)
	newSinkOn(t, db, nil) // migrates
	procs := make([]*postgres.Sink, 2)
	for i := range procs {
		pool := db.NewPool(t, func(c *pgxpool.Config) { c.MaxConns = 2 })
		s, err := postgres.New(pool, postgres.Config{Schema: db.Schema, Aggregates: sinktest.DelayAggregates(), States: []sink.StateSpec{sinktest.VehicleLatest()},
			Clock: sinktest.DefaultSetup().Clock})
		require.NoError(t, err)
		procs[i] = s
	}
	var wg sync.WaitGroup
	errs := make([]error, partitions)
	for p := range partitions {
		s := procs[p%2]
		wg.Go(func() {
			for _, b := range bs[p] {
				if err := s.WriteClose(ctx, b); err != nil {
					errs[p] = err
					return
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	assert.Equal(t, want, readWindows(t, ctx, procs[0], windows))
}

// A call of any size takes exactly one advisory lock: the aggregates table's.
func TestCloseTakesOneLock(t *testing.T) {
	ctx := testCtx(t)
	db := pgtest.New(t)
	var held int
	s := newSinkOn(t, db, func(c *postgres.Config) {
		c.Hooks.At = func(ctx context.Context, p postgres.Point, a postgres.Attempt) error {
			if p == postgres.BeforeCommit {
				return db.Pool.QueryRow(ctx, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = $1", int32(a.PID)).Scan(&held)
			}
			return nil
		}
	})
	bs := batches(t, 2, 3, 1, 5000)
	require.NoError(t, s.WriteClose(ctx, bs[0][0], bs[1][0], bs[2][0]))
	assert.Equal(t, 1, held)
	rows, err := s.Aggregates(ctx, sinktest.T0())
	require.NoError(t, err)
	assert.Len(t, rows, 5000)
}
