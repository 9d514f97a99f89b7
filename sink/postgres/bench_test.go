package postgres_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/postgres"
	"github.com/streamledger/streamledger/sink/sinktest"
)

var strategies = []postgres.Strategy{postgres.StrategyRowByRow, postgres.StrategyBatch, postgres.StrategyCopy, postgres.StrategyUnnest}

// BenchmarkWriteClose writes close batches of closeRows partials, each partial recomputing
// one merged row: partitions 0 and 1 alternate over the same keys, so every second batch
// merges with the other partition's stored partials. rows/s counts partials (= merged rows).
func BenchmarkWriteClose(b *testing.B) {
	const closeRows = 2000
	stats := benchPartialStats(b)
	for _, st := range strategies {
		b.Run(st.String(), func(b *testing.B) {
			benchWriteClose(b, stats, closeRows, func(c *postgres.Config) { c.Strategy = st })
		})
	}
}

// BenchmarkWriteCloseSizes is BenchmarkWriteClose with the default strategy for batches of
// several sizes: a processor sends whatever closed since its last tick, from a few partials
// to a whole window's keys.
func BenchmarkWriteCloseSizes(b *testing.B) {
	stats := benchPartialStats(b)
	for _, rows := range []int{100, 500, 2000, 10000} {
		b.Run(fmt.Sprint(rows), func(b *testing.B) {
			benchWriteClose(b, stats, rows, func(*postgres.Config) {})
		})
	}
}

// benchPartialStats returns 64 serialized partials of 20 values each.
func benchPartialStats(b *testing.B) [][]byte {
	stats := make([][]byte, 64)
	for i := range stats {
		vals := make([]float64, 20)
		for j := range vals {
			vals[j] = float64((i*31 + j*7) % 600)
		}
		stats[i] = sinktest.Stats(b, vals...)
	}
	return stats
}

// benchWriteClose writes batches of rows partials through a sink configured by configure:
// partitions 0 and 1 alternate over the same keys, so every second batch merges with the
// other partition's stored partials. rows/s counts partials (= merged rows).
func benchWriteClose(b *testing.B, stats [][]byte, rows int, configure func(*postgres.Config)) {
	ctx := testCtx(b)
	s, _ := newSink(b, func(c *postgres.Config) { configure(c); c.Clock = time.Now })
	batch := func(i int) sink.CloseBatch {
		start := sinktest.T0().Add(time.Duration(i/2) * 5 * time.Minute)
		end := start.Add(5 * time.Minute)
		out := sink.CloseBatch{Source: sink.TopicPartition{Topic: sinktest.Topic, Partition: int32(i % 2)}, ClosedThrough: end,
			Partials: make([]sink.Partial, rows)}
		for k := range out.Partials {
			out.Partials[k] = sink.Partial{Key: sink.Key{WindowStart: start, Dimension: "stop", DimensionID: fmt.Sprintf("S%05d", k)},
				WindowEnd: end, Attrs: map[string]string{"operator": "GVB"}, Stats: stats[(i+k)%len(stats)]}
		}
		return out
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		bt := batch(i)
		b.StartTimer()
		require.NoError(b, s.WriteClose(ctx, bt))
	}
	b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkWriteCloseReplay rewrites a stored close batch of closeRows partials, as a
// processor replaying after a crash would: with the default strategy the new-batch path
// fails at its first row and the batch takes the general (upsert) path.
func BenchmarkWriteCloseReplay(b *testing.B) {
	const closeRows = 2000
	ctx := testCtx(b)
	s, _ := newSink(b, func(c *postgres.Config) { c.Clock = time.Now })
	st := sinktest.Stats(b, 1, 5, 9, 12, 40, 41, 300)
	start := sinktest.T0()
	bt := sink.CloseBatch{Source: sink.TopicPartition{Topic: sinktest.Topic}, ClosedThrough: start.Add(5 * time.Minute),
		Partials: make([]sink.Partial, closeRows)}
	for k := range bt.Partials {
		bt.Partials[k] = sink.Partial{Key: sink.Key{WindowStart: start, Dimension: "stop", DimensionID: fmt.Sprintf("S%05d", k)},
			WindowEnd: bt.ClosedThrough, Attrs: map[string]string{"operator": "GVB"}, Stats: st}
	}
	require.NoError(b, s.WriteClose(ctx, bt))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		require.NoError(b, s.WriteClose(ctx, bt))
	}
	b.ReportMetric(float64(closeRows*b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkWriteCloseConcurrent is BenchmarkWriteClose with the default strategy and two
// writers (two partitions, as two consumers would) at once over the same keys: the rate the
// sink sustains when the server can use both cores.
func BenchmarkWriteCloseConcurrent(b *testing.B) {
	const closeRows, writers = 2000, 2
	ctx := testCtx(b)
	s, _ := newSink(b, func(c *postgres.Config) { c.Clock = time.Now })
	st := sinktest.Stats(b, 1, 5, 9, 12, 40, 41, 300)
	batch := func(p, w int) sink.CloseBatch {
		start := sinktest.T0().Add(time.Duration(w) * 5 * time.Minute)
		end := start.Add(5 * time.Minute)
		out := sink.CloseBatch{Source: sink.TopicPartition{Topic: sinktest.Topic, Partition: int32(p)}, ClosedThrough: end,
			Partials: make([]sink.Partial, closeRows)}
		for k := range out.Partials {
			out.Partials[k] = sink.Partial{Key: sink.Key{WindowStart: start, Dimension: "stop", DimensionID: fmt.Sprintf("S%05d", k)},
				WindowEnd: end, Attrs: map[string]string{"operator": "GVB"}, Stats: st}
		}
		return out
	}
	perWriter := (b.N + writers - 1) / writers
	prepared := make([][]sink.CloseBatch, writers)
	for p := range prepared {
		for w := range perWriter {
			prepared[p] = append(prepared[p], batch(p, w))
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for p := range writers {
		wg.Go(func() {
			for _, bt := range prepared[p] {
				if err := s.WriteClose(ctx, bt); err != nil {
					errs[p] = err
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	require.NoError(b, errors.Join(errs...))
	b.ReportMetric(float64(closeRows*perWriter*writers)/b.Elapsed().Seconds(), "rows/s")
}

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
				at := sinktest.T0().Add(time.Duration(i) * time.Second)
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
