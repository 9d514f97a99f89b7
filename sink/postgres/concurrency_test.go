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

	"github.com/streamledger/streamledger/internal/faults"
	"github.com/streamledger/streamledger/internal/pgtest"
	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/merge"
	"github.com/streamledger/streamledger/sink/postgres"
)

// batches returns, per partition, close batches for windows windows over keys keys.
func batches(t testing.TB, seed uint64, partitions, windows, keys int) [][]sink.CloseBatch {
	r := rand.New(rand.NewPCG(seed, 3))
	out := make([][]sink.CloseBatch, partitions)
	for p := range partitions {
		for w := range windows {
			start := sinkfixture.Start().Add(time.Duration(w) * 5 * time.Minute)
			end := start.Add(5 * time.Minute)
			b := sink.CloseBatch{Source: sink.TopicPartition{Topic: sinkfixture.Topic, Partition: int32(p)}, ClosedThrough: end}
			for k := range keys {
				n := 1 + r.IntN(8)
				if k%50 == 0 {
					n = 100 + r.IntN(200) // merged over the partitions, past window.DefaultExactLimit
				}
				vals := make([]float64, n)
				for i := range vals {
					vals[i] = float64(r.IntN(900))
				}
				b.Partials = append(b.Partials, sink.Partial{Key: sink.Key{WindowStart: start, Dimension: "stop", DimensionID: fmt.Sprint(k)},
					WindowEnd: end, Stats: sinkfixture.Stats(t, vals...)})
			}
			out[p] = append(out[p], b)
		}
	}
	return out
}

func readWindows(t *testing.T, ctx context.Context, s *postgres.Sink, windows int) []sink.Aggregate {
	var out []sink.Aggregate
	for w := range windows {
		rows, err := s.Aggregates(ctx, sinkfixture.Start().Add(time.Duration(w)*5*time.Minute))
		require.NoError(t, err)
		out = append(out, rows...)
	}
	return out
}

// register registers partitions 0 to n-1 of the suite's topic in one call.
func register(t *testing.T, s *postgres.Sink, n int) {
	var bs []sink.CloseBatch
	for p := range n {
		bs = append(bs, sink.CloseBatch{Source: sink.TopicPartition{Topic: sinkfixture.Topic, Partition: int32(p)}})
	}
	require.NoError(t, s.WriteClose(testCtx(t), bs...))
}

// Two processes (two sinks, two pools) each own half of the partitions and write one call
// per window holding their partitions' batches, at once, after every partition was
// registered; the merged rows equal a single writer's and the canonical merge, digest keys
// included.
func TestTwoProcessesWriteTheSameKeys(t *testing.T) {
	ctx := testCtx(t)
	const partitions, windows, keys = 6, 3, 300
	bs := batches(t, 1, partitions, windows, keys)

	single, _ := newSink(t, nil)
	register(t, single, partitions)
	for _, pb := range bs {
		for _, b := range pb {
			require.NoError(t, single.WriteClose(ctx, b))
		}
	}
	want := readWindows(t, ctx, single, windows)
	require.Len(t, want, windows*keys)
	digest := 0
	for _, row := range want {
		var parts [][]byte
		for p := range partitions {
			for _, pa := range bs[p][(row.WindowStart.Sub(sinkfixture.Start()))/(5*time.Minute)].Partials {
				if pa.Key == row.Key {
					parts = append(parts, pa.Stats)
				}
			}
		}
		sum, err := merge.Partials(sink.AggregateSpec{}, parts...)
		require.NoError(t, err)
		require.Equal(t, sum, row.Summary)
		if row.Count > 256 {
			digest++
		}
	}
	require.Positive(t, digest, "some rows merge digests")

	db := pgtest.New(t)
	newSinkOn(t, db, nil) // migrates
	procs := make([]*postgres.Sink, 2)
	for i := range procs {
		pool := db.NewPool(t, func(c *pgxpool.Config) { c.MaxConns = 2 })
		s, err := postgres.New(pool, postgres.Config{Schema: db.Schema, Aggregates: sinkfixture.Aggregates(), States: []sink.StateSpec{sinkfixture.Latest()},
			Clock: sinkfixture.Now})
		require.NoError(t, err)
		procs[i] = s
	}
	register(t, procs[0], partitions)
	var wg sync.WaitGroup
	errs := make([]error, len(procs))
	for i, s := range procs {
		wg.Go(func() {
			for w := range windows {
				var call []sink.CloseBatch
				for p := i; p < partitions; p += len(procs) {
					call = append(call, bs[p][w])
				}
				if err := s.WriteClose(ctx, call...); err != nil {
					errs[i] = err
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
	s := newSinkOn(t, db, nil)
	ctx = faults.With(ctx, func(ctx context.Context, p faults.Point, a faults.Attempt) error {
		if p == faults.BeforeCommit {
			return db.Pool.QueryRow(ctx, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = $1", int32(a.Conn)).Scan(&held)
		}
		return nil
	})
	bs := batches(t, 2, 3, 1, 5000)
	require.NoError(t, s.WriteClose(ctx, bs[0][0], bs[1][0], bs[2][0]))
	assert.Equal(t, 1, held)
	rows, err := s.Aggregates(ctx, sinkfixture.Start())
	require.NoError(t, err)
	assert.Len(t, rows, 5000)
}
