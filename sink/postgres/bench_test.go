package postgres_test

import (
	"testing"
	"time"

	"github.com/streamledger/streamledger/internal/sinkbench"
	"github.com/streamledger/streamledger/sink/postgres"
)

var strategies = []postgres.Strategy{postgres.StrategyBatch, postgres.StrategyCopy, postgres.StrategyUnnest}

// BenchmarkUpsertLatest writes batches of latestRows last-write-wins rows over a fleet of
// 20,000 vehicles (inserts first, then mostly updates).
func BenchmarkUpsertLatest(b *testing.B) {
	const latestRows, fleet = 5000, 20000
	for _, st := range strategies {
		b.Run(st.String(), func(b *testing.B) {
			ctx := testCtx(b)
			s, _ := newSink(b, func(c *postgres.Config) { c.Clock = time.Now })
			postgres.SetStrategy(s, st)
			sinkbench.UpsertFleet(ctx, b, s, latestRows, fleet)
		})
	}
}
