package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/pgtest"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/postgres"
	"github.com/streamledger/streamledger/sink/sinktest"
)

// The default strategy inserts a batch it assumes new with plain INSERTs and falls back to
// the upserts when a row exists after all. Each case prepares the tables, writes a batch
// through a traced pool and compares every merged row with the in-memory sink fed the
// batches that the stored partials come from.
func TestNewBatchPathFallsBack(t *testing.T) {
	start := sinktest.T0()
	end := start.Add(5 * time.Minute)
	key := func(id string) sink.Key { return sink.Key{WindowStart: start, Dimension: "line", DimensionID: id} }
	partial := func(id, operator string, values ...float64) sink.Partial {
		p := sink.Partial{Key: key(id), WindowEnd: end, Stats: sinktest.Stats(t, values...)}
		if operator != "" {
			p.Attrs = map[string]string{"operator": operator}
		}
		return p
	}
	batch := func(p int32, ps ...sink.Partial) sink.CloseBatch {
		return sink.CloseBatch{Source: sink.TopicPartition{Topic: sinktest.Topic, Partition: p}, ClosedThrough: end, Partials: ps}
	}
	p0 := batch(0, partial("a", "GVB", 1, 2, 3), partial("b", "", 4))
	for name, tc := range map[string]struct {
		before   []sink.CloseBatch                  // written first, through the sink
		tamper   string                             // SQL run after before
		write    sink.CloseBatch                    // the batch under test
		want     []sink.CloseBatch                  // the batches the memory sink gets for the expected rows
		fallback bool                               // whether the write must take the general path
		check    func(*testing.T, []sink.Aggregate) // extra checks of the rows read back
	}{
		"new batch": {
			write: p0, want: []sink.CloseBatch{p0},
		},
		"second partition of the same keys": {
			before: []sink.CloseBatch{p0},
			write:  batch(1, partial("a", "", 5), partial("c", "RET", 6)),
			want:   []sink.CloseBatch{p0, batch(1, partial("a", "", 5), partial("c", "RET", 6))},
		},
		"replayed batch with new stats": {
			before:   []sink.CloseBatch{p0},
			write:    batch(0, partial("a", "", 7, 8), partial("d", "EBS", 9)),
			want:     []sink.CloseBatch{p0, batch(0, partial("a", "", 7, 8), partial("d", "EBS", 9))},
			fallback: true,
			check: func(t *testing.T, rows []sink.Aggregate) {
				assert.Equal(t, map[string]string{"operator": "GVB"}, rows[0].Attrs, "a rewrite without the attribute keeps the stored one")
			},
		},
		"merged row whose partials were deleted": {
			before:   []sink.CloseBatch{p0},
			tamper:   `DELETE FROM delay_aggregates_partials`,
			write:    batch(1, partial("a", "RET", 5)),
			want:     []sink.CloseBatch{batch(1, partial("a", "RET", 5)), batch(0, partial("b", "", 4))},
			fallback: true,
		},
		"partials whose merged rows were deleted": {
			before:   []sink.CloseBatch{p0},
			tamper:   `DELETE FROM delay_aggregates`,
			write:    batch(1, partial("a", "", 5), partial("b", "", 6)),
			want:     []sink.CloseBatch{p0, batch(1, partial("a", "", 5), partial("b", "", 6))},
			fallback: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := testCtx(t)
			db := pgtest.New(t)
			newSinkOn(t, db, nil) // migrates
			pool, log := tracedPool(t, db)
			setup := sinktest.DefaultSetup()
			s, err := postgres.New(pool, postgres.Config{Schema: db.Schema, Aggregates: setup.Aggregates, Clock: setup.Clock})
			require.NoError(t, err)
			for _, b := range tc.before {
				require.NoError(t, s.WriteClose(ctx, b))
			}
			if tc.tamper != "" {
				_, err := db.Pool.Exec(ctx, tc.tamper)
				require.NoError(t, err)
			}
			before := len(log.all())
			require.NoError(t, s.WriteClose(ctx, tc.write))
			fellBack := false
			for _, sql := range log.all()[before:] {
				fellBack = fellBack || strings.HasPrefix(sql, "ROLLBACK TO SAVEPOINT")
			}
			assert.Equal(t, tc.fallback, fellBack, "the write fell back to the general path")

			mem, err := sinktest.NewMemory(sinktest.MemoryConfig{Aggregates: setup.Aggregates, Clock: setup.Clock})
			require.NoError(t, err)
			for _, b := range tc.want {
				require.NoError(t, mem.WriteClose(ctx, b))
			}
			want, err := mem.Aggregates(ctx, start)
			require.NoError(t, err)
			got, err := s.Aggregates(ctx, start)
			require.NoError(t, err)
			require.Len(t, got, len(want))
			for i := range want {
				// Readiness depends on the progress table, which tampering leaves alone.
				want[i].Complete, got[i].Complete = false, false
			}
			assert.Equal(t, want, got)
			if tc.check != nil {
				tc.check(t, got)
			}
		})
	}
}

// A replayed batch takes the general path and still commits the progress once.
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

// Two writers of the same partition (a processor and its zombie after a rebalance) write
// the same batches at once: one inserts, the other waits on its rows and falls back to the
// upserts; both succeed and the rows are those of one write.
func TestSamePartitionWrittenTwiceAtOnce(t *testing.T) {
	ctx := testCtx(t)
	const windows, keys = 3, 300
	bs := batches(t, 7, 2, windows, keys)
	single, _ := newSink(t, nil)
	for _, pb := range bs {
		for _, b := range pb {
			require.NoError(t, single.WriteClose(ctx, b))
		}
	}
	want := readWindows(t, ctx, single, windows)

	s, _ := newSink(t, nil)
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

// A large batch sharing every key with another partition: a surprise at its last key (a
// merged row deleted behind the sink's back) still rolls the whole attempt back to the
// general path.
func TestNewBatchPathLargeBatch(t *testing.T) {
	const keys = 1300
	start := sinktest.T0()
	end := start.Add(5 * time.Minute)
	batch := func(p int32, vals ...float64) sink.CloseBatch {
		b := sink.CloseBatch{Source: sink.TopicPartition{Topic: sinktest.Topic, Partition: p}, ClosedThrough: end}
		for k := range keys {
			b.Partials = append(b.Partials, sink.Partial{Key: sink.Key{WindowStart: start, Dimension: "stop", DimensionID: fmt.Sprintf("S%05d", k)},
				WindowEnd: end, Stats: sinktest.Stats(t, append(vals, float64(k))...)})
		}
		return b
	}
	first, second := batch(0, 1, 2), batch(1, 3)
	setup := sinktest.DefaultSetup()
	mem, err := sinktest.NewMemory(sinktest.MemoryConfig{Aggregates: setup.Aggregates, Clock: setup.Clock})
	require.NoError(t, err)
	for _, b := range []sink.CloseBatch{first, second} {
		require.NoError(t, mem.WriteClose(testCtx(t), b))
	}
	want, err := mem.Aggregates(testCtx(t), start)
	require.NoError(t, err)
	for name, tamper := range map[string]string{
		"untouched":                       "",
		"merged row of the last key gone": fmt.Sprintf(`DELETE FROM delay_aggregates WHERE dimension_id = 'S%05d'`, keys-1),
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
