package feed_test

import (
	"io"
	"testing"
	"time"

	"github.com/streamledger/streamledger/examples/ov/feed"
)

// BenchmarkGenerate measures the simulator at the national morning peak, per record.
func BenchmarkGenerate(b *testing.B) {
	cfg := feed.Config{Seed: 1, Start: at(8, 0), Duration: time.Minute, DisorderShare: feed.SuggestedDisorderShare,
		LateShare: feed.SuggestedLateShare, MalformedShare: feed.SuggestedMalformedShare}
	b.ReportAllocs()
	records := 0
	var elapsed time.Duration
	for b.Loop() {
		g, err := feed.New(cfg) // builds the national network: part of the cost
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		for {
			if _, ok := g.Next(); !ok {
				break
			}
			records++
		}
		elapsed += time.Since(start)
	}
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(records), "ns/record")
	b.ReportMetric(float64(records)/float64(b.N), "records/op")
}

func BenchmarkWriteJSONL(b *testing.B) {
	recs, _, err := feed.Generate(small())
	if err != nil {
		b.Fatal(err)
	}
	w := feed.NewWriter(io.Discard)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := w.Write(recs[i%len(recs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
