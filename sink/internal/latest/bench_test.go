package latest_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/latest"
)

// BenchmarkPrepare measures the collapse of a state flush to the newest row per key, which
// runs on every tick before the rows are sent: 10,000 vehicle positions over 5,000 vehicles
// (two reports each in the flush: a 20 s report interval against a 5 s flush at twice the
// national peak), keyed by a single string as latest is.
func BenchmarkPrepare(b *testing.B) {
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
		out, err := latest.Prepare(rows, func(string) (sink.StateSpec, bool) { return spec, true })
		if err != nil {
			b.Fatal(err)
		}
		if len(out) != 1 || len(out[0]) != vehicles {
			b.Fatalf("collapsed to %d groups of %d rows, want one of %d", len(out), len(out[0]), vehicles)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rowsPerFlush), "ns/row")
}
