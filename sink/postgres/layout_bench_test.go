package postgres_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/pgtest"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/postgres"
	"github.com/streamledger/streamledger/sink/sinktest"
	"github.com/streamledger/streamledger/window"
)

// ovWindow is one 5-minute window of an OV-like workload: 7,000 keys over four dimensions,
// 5 to 300 values per key spread at random over the partitions. The values are whole
// seconds of delay, mostly within a few minutes of on time (normal around 60 s, sd 120 s):
// how arrival delays are distributed shapes how well the stored stats compress.
type ovWindow struct {
	// partials[p] holds partition p's partials, keyed at the window starting at T0; the
	// benchmark moves them to the window it writes.
	partials [][]sink.Partial
	merged   []sink.Partial // the merged stats of each key, for the baseline
}

func ovWorkload(b *testing.B, seed uint64, partitions int) ovWindow {
	r := rand.New(rand.NewPCG(seed, 7))
	dims := []struct {
		name string
		keys int
	}{{"network", 1}, {"owner", 20}, {"line", 1500}, {"stop", 5479}}
	out := ovWindow{partials: make([][]sink.Partial, partitions)}
	for _, d := range dims {
		for k := range d.keys {
			key := sink.Key{WindowStart: sinktest.Start(), Dimension: d.name, DimensionID: fmt.Sprintf("%s-%05d", d.name, k)}
			parts := make([]*window.Stats, partitions)
			all := window.NewStats()
			for range 5 + r.IntN(296) {
				v := math.Round(r.NormFloat64()*120 + 60)
				p := r.IntN(partitions)
				if parts[p] == nil {
					parts[p] = window.NewStats()
				}
				require.NoError(b, parts[p].Add(v))
				require.NoError(b, all.Add(v))
			}
			attrs := map[string]string{"owner": fmt.Sprintf("OP%d", k%20)}
			for p, st := range parts {
				if st != nil {
					enc, err := st.MarshalBinary()
					require.NoError(b, err)
					out.partials[p] = append(out.partials[p], sink.Partial{Key: key, Attrs: attrs, Stats: enc})
				}
			}
			enc, err := all.MarshalBinary()
			require.NoError(b, err)
			out.merged = append(out.merged, sink.Partial{Key: key, Attrs: attrs, Stats: enc})
		}
	}
	return out
}

// at returns ps moved to the window starting at start.
func at(ps []sink.Partial, start time.Time) []sink.Partial {
	out := make([]sink.Partial, len(ps))
	for i, p := range ps {
		p.WindowStart, p.WindowEnd = start, start.Add(5*time.Minute)
		out[i] = p
	}
	return out
}

// layoutCounters are the cost figures of one run: row writes from pg_stat_user_tables (all
// tables of the schema), WAL bytes, and the size of every table of the schema.
type layoutCounters struct {
	writes, wal, size float64
	sizes             map[string]float64
}

func readCounters(b *testing.B, ctx context.Context, db *pgtest.DB, walFrom string) layoutCounters {
	// Pending table statistics reach the shared view when the writers' backends flush them;
	// the writers' pool is closed before this, which makes them flush. Wait until it shows.
	var c layoutCounters
	var prev float64 = -1
	for range 50 {
		_, err := db.Pool.Exec(ctx, "SELECT pg_stat_clear_snapshot()")
		require.NoError(b, err)
		require.NoError(b, db.Pool.QueryRow(ctx, `SELECT coalesce(sum(n_tup_ins + n_tup_upd), 0) FROM pg_stat_user_tables WHERE schemaname = $1`,
			db.Schema).Scan(&c.writes))
		if c.writes == prev {
			break
		}
		prev = c.writes
		time.Sleep(200 * time.Millisecond)
	}
	require.NoError(b, db.Pool.QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)`, walFrom).Scan(&c.wal))
	rows, err := db.Pool.Query(ctx, `SELECT tablename, pg_total_relation_size(format('%I.%I', schemaname, tablename)) FROM pg_tables WHERE schemaname = $1`, db.Schema)
	require.NoError(b, err)
	c.sizes = map[string]float64{}
	var name string
	var size float64
	_, err = pgx.ForEachRow(rows, []any{&name, &size}, func() error { c.sizes[name] = size; c.size += size; return nil })
	require.NoError(b, err)
	return c
}

func walNow(b *testing.B, ctx context.Context, db *pgtest.DB) string {
	var lsn string
	require.NoError(b, db.Pool.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&lsn))
	return lsn
}

// BenchmarkCloseLayout writes an OV-like workload (see ovWorkload) window after window. One
// op is one window. The fold cases differ in how the partitions' closes of a window reach
// the sink:
//
//   - aligned: one consumer whose partitions close the window at the same tick: one
//     WriteClose call with every partition's batch;
//   - straddled: one consumer whose partitions close it over two ticks (0, 2, 4 at the
//     first, 1, 3, 5 at the second), each tick one call with all six partitions' batches;
//   - consumers=N: N consumers, each owning every Nth partition, closing the window one
//     after another, each with one call holding its own partitions' batches.
//
// It reports merged rows per second, row writes per stored merged row ((n_tup_ins +
// n_tup_upd) of every table of the schema over the merged rows), WAL bytes per merged row,
// and table bytes per merged row (merged table, the rest). The merged-only case writes the
// same merged rows, computed beforehand, with one plain INSERT per window into a table of
// the same shape: the baseline of what storing the result alone costs.
func BenchmarkCloseLayout(b *testing.B) {
	for _, tc := range []struct {
		name              string
		partitions, calls int
		ownCalls          bool // each call holds only its own partitions' batches (several consumers)
	}{
		{"aligned", 6, 1, false},
		{"straddled", 6, 2, false},
		{"consumers=2", 6, 2, true},
		{"consumers=3", 6, 3, true},
		{"consumers=3/partitions=12", 12, 3, true},
	} {
		data := []ovWindow{ovWorkload(b, 1, tc.partitions), ovWorkload(b, 2, tc.partitions)}
		b.Run("fold/"+tc.name, func(b *testing.B) { benchFold(b, data, tc.partitions, tc.calls, tc.ownCalls) })
	}
	data := []ovWindow{ovWorkload(b, 1, 6), ovWorkload(b, 2, 6)}
	b.Run("merged-only", func(b *testing.B) { benchMergedOnly(b, data) })
}

// benchFold closes each window over calls WriteClose calls: call g carries the partials of
// the partitions p with p % calls == g. With ownCalls a call holds only those partitions'
// batches (each call is another consumer's); otherwise every call holds every partition's,
// the others' progress short of the window's end (one consumer's ticks).
func benchFold(b *testing.B, data []ovWindow, partitions, calls int, ownCalls bool) {
	ctx := testCtx(b)
	db := pgtest.New(b)
	newSinkOn(b, db, nil) // migrates
	pool := db.NewPool(b, nil)
	s, err := postgres.New(pool, postgres.Config{Schema: db.Schema, Aggregates: sinktest.Aggregates(), Clock: time.Now})
	require.NoError(b, err)
	tps := make([]sink.CloseBatch, partitions)
	for p := range tps {
		tps[p] = sink.CloseBatch{Source: sink.TopicPartition{Topic: sinktest.Topic, Partition: int32(p)}}
	}
	require.NoError(b, s.WriteClose(ctx, tps...))
	wal := walNow(b, ctx, db)
	rows := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		w := data[i%len(data)]
		start := sinktest.Start().Add(time.Duration(i) * 5 * time.Minute)
		batches := foldCalls(w, start, partitions, calls, ownCalls)
		rows += len(w.merged)
		b.StartTimer()
		for _, call := range batches {
			require.NoError(b, s.WriteClose(ctx, call...))
		}
	}
	b.StopTimer()
	elapsed := b.Elapsed()
	pool.Close()
	reportLayout(b, ctx, db, wal, rows, elapsed, sinktest.AggregatesTable)
}

// foldCalls returns the WriteClose calls that close the window starting at start (see
// benchFold).
func foldCalls(w ovWindow, start time.Time, partitions, calls int, ownCalls bool) [][]sink.CloseBatch {
	end := start.Add(5 * time.Minute)
	out := make([][]sink.CloseBatch, calls)
	for g := range calls {
		for p := range partitions {
			src := sink.TopicPartition{Topic: sinktest.Topic, Partition: int32(p)}
			switch {
			case p%calls == g:
				out[g] = append(out[g], sink.CloseBatch{Source: src, ClosedThrough: end.Add(time.Duration(g) * time.Second), Partials: at(w.partials[p], start)})
			case ownCalls:
			case p%calls < g:
				out[g] = append(out[g], sink.CloseBatch{Source: src, ClosedThrough: end.Add(time.Duration(g) * time.Second)})
			default:
				out[g] = append(out[g], sink.CloseBatch{Source: src, ClosedThrough: end.Add(-time.Minute)})
			}
		}
	}
	return out
}

func benchMergedOnly(b *testing.B, data []ovWindow) {
	ctx := testCtx(b)
	db := pgtest.New(b)
	newSinkOn(b, db, nil)
	pool := db.NewPool(b, func(*pgxpool.Config) {})
	insert := `INSERT INTO aggregates (window_start, window_end, dimension, dimension_id, operator, event_count, mean_value, ` +
		`p90_value, max_value, min_value, computed_at) SELECT *, $11::timestamptz FROM unnest($1::timestamptz[], $2::timestamptz[], ` +
		`$3::text[], $4::text[], $5::text[], $6::int8[], $7::float8[], $8::float8[], $9::float8[], $10::float8[])`
	wal := walNow(b, ctx, db)
	rows := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		w := data[i%len(data)]
		start := sinktest.Start().Add(time.Duration(i) * 5 * time.Minute)
		n := len(w.merged)
		starts, ends := make([]time.Time, n), make([]time.Time, n)
		dims, ids, ops := make([]string, n), make([]string, n), make([]string, n)
		counts := make([]int64, n)
		means, qs, maxs, mins := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
		for k, m := range w.merged {
			sum, err := (sink.AggregateSpec{}).SummarizePartials(m.Stats)
			require.NoError(b, err)
			starts[k], ends[k], dims[k], ids[k], ops[k] = start, start.Add(5*time.Minute), m.Dimension, m.DimensionID, m.Attrs["owner"]
			counts[k], means[k], qs[k], maxs[k], mins[k] = sum.Count, sum.Mean, sum.Quantile, sum.Max, sum.Min
		}
		rows += n
		b.StartTimer()
		_, err := pool.Exec(ctx, insert, starts, ends, dims, ids, ops, counts, means, qs, maxs, mins, time.Now())
		require.NoError(b, err)
	}
	b.StopTimer()
	elapsed := b.Elapsed()
	pool.Close()
	reportLayout(b, ctx, db, wal, rows, elapsed, sinktest.AggregatesTable)
}

func reportLayout(b *testing.B, ctx context.Context, db *pgtest.DB, wal string, rows int, elapsed time.Duration, merged string) {
	c := readCounters(b, ctx, db, wal)
	n := float64(rows)
	b.ReportMetric(n/elapsed.Seconds(), "rows/s")
	b.ReportMetric(c.writes/n, "writes/row")
	b.ReportMetric(c.wal/n, "WAL-B/row")
	b.ReportMetric(c.sizes[merged]/n, "merged-B/row")
	b.ReportMetric((c.size-c.sizes[merged])/n, "other-B/row")
	b.ReportMetric(0, "ns/op")
	b.Logf("%d merged rows; table bytes: %v", rows, c.sizes)
}
