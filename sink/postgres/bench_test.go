package postgres_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/postgres"
	"github.com/streamledger/streamledger/sink/sinktest"
)

var strategies = []postgres.Strategy{postgres.StrategyBatch, postgres.StrategyCopy, postgres.StrategyUnnest}

// BenchmarkUpsertLatest writes batches of latestRows last-write-wins rows over a fleet of
// 20,000 vehicles (inserts first, then mostly updates).
func BenchmarkUpsertLatest(b *testing.B) {
	const latestRows, fleet = 5000, 20000
	for _, st := range strategies {
		b.Run(st.String(), func(b *testing.B) {
			ctx := testCtx(b)
			s, _ := newSink(b, func(c *postgres.Config) { c.Strategy = st; c.Clock = time.Now })
			ids := make([]string, fleet)
			for i := range ids {
				ids[i] = fmt.Sprintf("veh-%05d", i)
			}
			rows := make([]sink.StateRow, latestRows)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				at := sinktest.Start().Add(time.Duration(i) * time.Second)
				for k := range rows {
					rows[k] = sink.StateRow{Key: []any{ids[(i*latestRows+k*7)%fleet]}, ObservedAt: at,
						Values: []any{fmt.Sprintf("trip-%d", k%300), float64(k % 600), int64(k % 40)}}
				}
				b.StartTimer()
				require.NoError(b, s.UpsertLatest(ctx, sinktest.StateTable, rows))
			}
			b.ReportMetric(float64(latestRows*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
