package ledger_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/streamledger/streamledger/ledger"
)

// An in-order stream: each message is added, and every 1,000 messages (a tick) the window
// closes through the watermark and the committable offset is taken. One op is one message.
func BenchmarkAddReleaseInOrder(b *testing.B) {
	const perWindow = 10_000
	p := ledger.NewPartition()
	ends := make([]ledger.Condition, 64)
	for i := range ends {
		ends[i] = ledger.Window(t0.Add(time.Duration(i+1) * 5 * time.Minute))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w := i / perWindow
		_ = p.Add(int64(i), ends[w%len(ends)])
		if i%1000 == 999 && w > 0 {
			_ = p.CloseThrough(t0.Add(time.Duration(w) * 5 * time.Minute))
			p.Committable()
			if w%len(ends) == 0 {
				b.StopTimer()
				p = ledger.NewPartition() // the precomputed window ends wrap around
				b.StartTimer()
			}
		}
	}
}

// The worst case for memory: every message alternates between two conditions, so every
// message is a run of its own.
func BenchmarkAddReleaseAlternating(b *testing.B) {
	p := ledger.NewPartition()
	conds := []ledger.Condition{ledger.Window(t0.Add(5 * time.Minute)), ledger.Flush(1)}
	_ = p.Flushed(1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = p.Add(int64(i), conds[i&1])
		if i%1000 == 999 {
			// The window never closes here, so everything stays pending: the memory figure
			// below is per pending message.
			p.Committable()
		}
	}
	b.StopTimer()
	reportHeap(b, func() *ledger.Partition {
		q := ledger.NewPartition()
		for i := 0; i < 1_000_000; i++ {
			_ = q.Add(int64(i), conds[i&1])
		}
		return q
	}, 1_000_000)
}

// Bytes per pending message: 10 M in-order messages over 10 windows, none yet durable.
func BenchmarkPendingMemoryInOrder(b *testing.B) {
	const n = 10_000_000
	for i := 0; i < b.N; i++ {
		reportHeap(b, func() *ledger.Partition {
			p := ledger.NewPartition()
			for off := 0; off < n; off++ {
				_ = p.Add(int64(off), ledger.Window(t0.Add(time.Duration(off/(n/10)+1)*5*time.Minute)))
			}
			return p
		}, n)
	}
}

// Out-of-order acks, as a service acking async work: messages are added one per op and acked
// in blocks of 64, each block in reverse order, one block behind the adds.
func BenchmarkAckOutOfOrder(b *testing.B) {
	p := ledger.NewPartition()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = p.Add(int64(i), ledger.Ack())
		if i%64 == 63 && i >= 127 {
			for off := int64(i - 64); off > int64(i-128); off-- {
				_ = p.Ack(off)
			}
			p.Committable()
		}
	}
}

// A tick over 12 partitions: what to commit, then mark it committed.
func BenchmarkTrackerTick12Partitions(b *testing.B) {
	tr := ledger.NewTracker()
	parts := make([]*ledger.Partition, 12)
	for i := range parts {
		parts[i], _ = tr.Assign(ledger.TopicPartition{Topic: "arrival-predictions", Partition: int32(i)}, -1)
	}
	var buf []ledger.Commit
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j, p := range parts {
			_ = p.Add(int64(i), ledger.Flush(uint64(i+1)))
			_ = p.Flushed(uint64(i + 1))
			p.SetWatermark(t0.Add(time.Duration(i+j) * time.Second))
		}
		buf = tr.AppendCommits(buf[:0])
		tr.MarkCommitted(buf...)
	}
}

// reportHeap builds a ledger with build and reports the heap it holds per message.
func reportHeap(b *testing.B, build func() *ledger.Partition, n int) {
	b.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	p := build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(n), "B/pending-msg")
	b.ReportMetric(float64(ledger.Runs(p)), "runs")
	runtime.KeepAlive(p)
}
