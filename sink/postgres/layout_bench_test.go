package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/pgtest"
	"github.com/streamledger/streamledger/internal/sinkbench"
	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/merge"
	"github.com/streamledger/streamledger/sink/postgres"
)

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

// BenchmarkCloseLayout writes an OV-like workload (sinkbench.Workload) window after window, in
// the shapes of sinkbench.LayoutCases. One op is one window.
//
// It reports merged rows per second, row writes per stored merged row ((n_tup_ins +
// n_tup_upd) of every table of the schema over the merged rows), WAL bytes per merged row,
// and table bytes per merged row (merged table, the rest). The merged-only case writes the
// same merged rows, computed beforehand, with one plain INSERT per window into a table of
// the same shape: the baseline of what storing the result alone costs.
func BenchmarkCloseLayout(b *testing.B) {
	for _, tc := range sinkbench.LayoutCases {
		data := []sinkbench.Workload{sinkbench.NewWorkload(b, 1, tc.Partitions), sinkbench.NewWorkload(b, 2, tc.Partitions)}
		b.Run("fold/"+tc.Name, func(b *testing.B) { benchFold(b, data, tc.Calls, tc.OwnCalls) })
	}
	data := []sinkbench.Workload{sinkbench.NewWorkload(b, 1, 6), sinkbench.NewWorkload(b, 2, 6)}
	b.Run("merged-only", func(b *testing.B) { benchMergedOnly(b, data) })
}

// benchFold closes each window over calls WriteClose calls (see sinkbench.Workload.Calls).
func benchFold(b *testing.B, data []sinkbench.Workload, calls int, ownCalls bool) {
	ctx := testCtx(b)
	db := pgtest.New(b)
	newSinkOn(b, db, nil) // migrates
	pool := db.NewPool(b, nil)
	s, err := postgres.New(pool, postgres.Config{Schema: db.Schema, Aggregates: sinkfixture.Aggregates(), Clock: time.Now})
	require.NoError(b, err)
	wal := walNow(b, ctx, db)
	rows := sinkbench.WriteWindows(ctx, b, s, data, calls, ownCalls)
	elapsed := b.Elapsed()
	pool.Close()
	reportLayout(b, ctx, db, wal, rows, elapsed, sinkfixture.AggregatesTable)
}

func benchMergedOnly(b *testing.B, data []sinkbench.Workload) {
	ctx := testCtx(b)
	db := pgtest.New(b)
	newSinkOn(b, db, nil)
	pool := db.NewPool(b, func(*pgxpool.Config) {})
	insert := `INSERT INTO aggregates (window_start, window_end, dimension, dimension_id, owner, event_count, mean_value, ` +
		`p90_value, max_value, min_value, computed_at) SELECT *, $11::timestamptz FROM unnest($1::timestamptz[], $2::timestamptz[], ` +
		`$3::text[], $4::text[], $5::text[], $6::int8[], $7::float8[], $8::float8[], $9::float8[], $10::float8[])`
	wal := walNow(b, ctx, db)
	rows := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		w := data[i%len(data)]
		start := sinkfixture.Start().Add(time.Duration(i) * 5 * time.Minute)
		n := len(w.Merged)
		starts, ends := make([]time.Time, n), make([]time.Time, n)
		dims, ids, ops := make([]string, n), make([]string, n), make([]string, n)
		counts := make([]int64, n)
		means, qs, maxs, mins := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
		for k, m := range w.Merged {
			sum, err := merge.Partials(sink.AggregateSpec{}, m.Stats)
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
	reportLayout(b, ctx, db, wal, rows, elapsed, sinkfixture.AggregatesTable)
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
