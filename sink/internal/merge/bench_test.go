package merge_test

import (
	"testing"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/merge"
)

// BenchmarkPartials measures recomputing one merged row from its stored partials, as a
// close batch does for every merged row it touches: 12 partitions' serialized windows of a
// busy key (exact, 40 values each) and of the network key (digest, 2,000 values each).
func BenchmarkPartials(b *testing.B) {
	for _, tc := range []struct {
		name string
		n    int
	}{{"exact", 40}, {"digest", 2000}} {
		b.Run(tc.name, func(b *testing.B) {
			parts := make([][]byte, 12)
			for p := range parts {
				vals := make([]float64, tc.n)
				for i := range vals {
					vals[i] = float64((p*7919 + i*104729) % 1800)
				}
				parts[p] = stats(b, vals...)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := merge.Partials(sink.AggregateSpec{}, parts...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
