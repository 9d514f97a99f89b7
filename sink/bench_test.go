package sink_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/streamledger/streamledger/sink"
)

// BenchmarkPrepareLatest measures the collapse of a state flush to the newest row per key, which
// runs on every tick before the rows are sent: 10,000 vehicle positions over 5,000 vehicles
// (two reports each in the flush: a 20 s report interval against a 5 s flush at twice the
// national peak), keyed by a single string as latest is.
func BenchmarkPrepareLatest(b *testing.B) {
	spec := sink.StateSpec{
		Table:      "latest",
		Key:        []sink.Column{{Name: "entity_id", Type: sink.Text}},
		ObservedAt: sink.Column{Name: "observed_at", Type: sink.Timestamp},
		Values:     []sink.Column{{Name: "line", Type: sink.Text}, {Name: "lat", Type: sink.Float64}},
	}
	const rowsPerFlush, vehicles = 10000, 5000
	t0 := time.Date(2026, 3, 10, 7, 45, 0, 0, time.UTC)
	rows := make([]sink.StateRow, rowsPerFlush)
	for i := range rows {
		v := i % vehicles
		rows[i] = sink.StateRow{
			Table:      spec.Table,
			Key:        []any{"GVB:" + strconv.Itoa(v)},
			ObservedAt: t0.Add(time.Duration(i) * time.Millisecond),
			Values:     []any{"GVB:17", 52.37},
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		out, err := sink.PrepareLatest(rows, func(string) (sink.StateSpec, bool) { return spec, true })
		if err != nil {
			b.Fatal(err)
		}
		if len(out) != 1 || len(out[0]) != vehicles {
			b.Fatalf("collapsed to %d groups of %d rows, want one of %d", len(out), len(out[0]), vehicles)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rowsPerFlush), "ns/row")
}

// BenchmarkSummarizePartials measures recomputing one merged row from its stored partials, as a
// close batch does for every merged row it touches: 12 partitions' serialized windows of a
// busy key (exact, 40 values each) and of the network key (digest, 2,000 values each).
func BenchmarkSummarizePartials(b *testing.B) {
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
				if _, err := (sink.AggregateSpec{}).SummarizePartials(parts...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
