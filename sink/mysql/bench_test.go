package mysql_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/mytest"
	"github.com/streamledger/streamledger/internal/sinkbench"
	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/merge"
	"github.com/streamledger/streamledger/sink/mysql"
)

// BenchmarkUpsertLatest writes batches of latestRows last-write-wins rows over a fleet of
// 20,000 vehicles (inserts first, then mostly updates), as the Postgres sink's benchmark of
// the same name does.
func BenchmarkUpsertLatest(b *testing.B) {
	const latestRows, fleet = 5000, 20000
	b.Run("multirow", func(b *testing.B) {
		ctx := testCtx(b)
		s, _ := newSink(b, func(c *mysql.Config) { c.Clock = time.Now })
		sinkbench.UpsertFleet(ctx, b, s, latestRows, fleet)
	})
}

// BenchmarkCloseLayout writes an OV-like workload (sinkbench.Workload) window after window, in
// the shapes of sinkbench.LayoutCases, as the Postgres sink's benchmark of the same name
// does. One op is one window. It reports merged rows per second and table bytes (data and
// indexes, after ANALYZE TABLE) per merged row: the merged table and the rest. The
// merged-only case writes the same merged rows, computed beforehand, with multi-row INSERTs
// into the merged table: the baseline of what storing the result alone costs.
func BenchmarkCloseLayout(b *testing.B) {
	for _, tc := range sinkbench.LayoutCases {
		data := []sinkbench.Workload{sinkbench.NewWorkload(b, 1, tc.Partitions), sinkbench.NewWorkload(b, 2, tc.Partitions)}
		b.Run("fold/"+tc.Name, func(b *testing.B) { benchFold(b, data, tc.Calls, tc.OwnCalls) })
	}
	data := []sinkbench.Workload{sinkbench.NewWorkload(b, 1, 6), sinkbench.NewWorkload(b, 2, 6)}
	b.Run("merged-only", func(b *testing.B) { benchMergedOnly(b, data) })
}

func benchFold(b *testing.B, data []sinkbench.Workload, calls int, ownCalls bool) {
	ctx := testCtx(b)
	s, db := newSink(b, func(c *mysql.Config) { c.Clock = time.Now })
	rows := sinkbench.WriteWindows(ctx, b, s, data, calls, ownCalls)
	reportLayout(b, ctx, db, rows, b.Elapsed())
}

func benchMergedOnly(b *testing.B, data []sinkbench.Workload) {
	ctx := testCtx(b)
	_, db := newSink(b, nil)
	const chunk = 1000
	rowSQL := "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	rows := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		w := data[i%len(data)]
		start := sinkfixture.Start().Add(time.Duration(i) * 5 * time.Minute)
		args := make([]any, 0, len(w.Merged)*11)
		for _, m := range w.Merged {
			sum, err := merge.Partials(sink.AggregateSpec{}, m.Stats)
			require.NoError(b, err)
			args = append(args, start.Format("2006-01-02 15:04:05"), start.Add(5*time.Minute).Format("2006-01-02 15:04:05"), m.Dimension, m.DimensionID,
				m.Attrs["owner"], sum.Count, sum.Mean, sum.Quantile, sum.Max, sum.Min, time.Now().UTC().Format("2006-01-02 15:04:05.000000"))
		}
		rows += len(w.Merged)
		b.StartTimer()
		for lo := 0; lo < len(w.Merged); lo += chunk {
			hi := min(lo+chunk, len(w.Merged))
			q := "INSERT INTO `aggregates` (`window_start`, `window_end`, `dimension`, `dimension_id`, `owner`, `event_count`, `mean_value`, " +
				"`p90_value`, `max_value`, `min_value`, `computed_at`) VALUES " + strings.TrimSuffix(strings.Repeat(rowSQL+", ", hi-lo), ", ")
			_, err := db.DB.ExecContext(ctx, q, args[lo*11:hi*11]...)
			require.NoError(b, err)
		}
	}
	b.StopTimer()
	reportLayout(b, ctx, db, rows, b.Elapsed())
}

// reportLayout reports merged rows per second and table bytes per merged row.
func reportLayout(b *testing.B, ctx context.Context, db *mytest.DB, rows int, elapsed time.Duration) {
	tables, err := db.DB.QueryContext(ctx, "SELECT `TABLE_NAME` FROM information_schema.`TABLES` WHERE `TABLE_SCHEMA` = DATABASE() AND `TABLE_TYPE` = 'BASE TABLE'")
	require.NoError(b, err)
	var names []string
	for tables.Next() {
		var n string
		require.NoError(b, tables.Scan(&n))
		names = append(names, n)
	}
	require.NoError(b, tables.Close())
	for _, n := range names {
		_, err := db.DB.ExecContext(ctx, "ANALYZE TABLE `"+n+"`")
		require.NoError(b, err)
	}
	sizes := map[string]float64{}
	var total float64
	res, err := db.DB.QueryContext(ctx, "SELECT `TABLE_NAME`, `DATA_LENGTH` + `INDEX_LENGTH` FROM information_schema.`TABLES` WHERE `TABLE_SCHEMA` = DATABASE() AND `TABLE_TYPE` = 'BASE TABLE'")
	require.NoError(b, err)
	for res.Next() {
		var n string
		var size float64
		require.NoError(b, res.Scan(&n, &size))
		sizes[n] = size
		total += size
	}
	require.NoError(b, res.Close())
	n := float64(rows)
	b.ReportMetric(n/elapsed.Seconds(), "rows/s")
	b.ReportMetric(sizes[sinkfixture.AggregatesTable]/n, "merged-B/row")
	b.ReportMetric((total-sizes[sinkfixture.AggregatesTable])/n, "other-B/row")
	b.ReportMetric(0, "ns/op")
	b.Logf("%d merged rows; table bytes: %v", rows, sizes)
}
