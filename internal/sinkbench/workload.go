package sinkbench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/window"
)

// Workload is one 5-minute window of an OV-like workload for benchmarks, the same for every
// sink so that their figures compare: 7,000 keys over four dimensions, 5 to 300 values per
// key spread at random over the partitions. The values are whole seconds of delay, mostly
// within a few minutes of on time (normal around 60 s, sd 120 s): how arrival delays are
// distributed shapes how well the stored stats compress.
type Workload struct {
	// Partials[p] holds partition p's partials, keyed at the window starting at [sinkfixture.Start];
	// [Workload.Calls] moves them to the window a benchmark writes.
	Partials [][]sink.Partial
	// Merged holds the merged stats of each key, for a baseline that stores the merged rows
	// alone.
	Merged []sink.Partial
}

// NewWorkload returns the workload of seed over partitions partitions.
func NewWorkload(tb testing.TB, seed uint64, partitions int) Workload {
	r := rand.New(rand.NewPCG(seed, 7))
	dims := []struct {
		name string
		keys int
	}{{"network", 1}, {"owner", 20}, {"line", 1500}, {"stop", 5479}}
	out := Workload{Partials: make([][]sink.Partial, partitions)}
	must := func(err error) {
		if err != nil {
			tb.Fatal(err)
		}
	}
	for _, d := range dims {
		for k := range d.keys {
			key := sink.Key{WindowStart: sinkfixture.Start(), Dimension: d.name, DimensionID: fmt.Sprintf("%s-%05d", d.name, k)}
			parts := make([]*window.Stats, partitions)
			all := window.NewStats()
			for range 5 + r.IntN(296) {
				v := math.Round(r.NormFloat64()*120 + 60)
				p := r.IntN(partitions)
				if parts[p] == nil {
					parts[p] = window.NewStats()
				}
				must(parts[p].Add(v))
				must(all.Add(v))
			}
			attrs := map[string]string{"owner": fmt.Sprintf("OP%d", k%20)}
			for p, st := range parts {
				if st != nil {
					enc, err := st.MarshalBinary()
					must(err)
					out.Partials[p] = append(out.Partials[p], sink.Partial{Key: key, Attrs: attrs, Stats: enc})
				}
			}
			enc, err := all.MarshalBinary()
			must(err)
			out.Merged = append(out.Merged, sink.Partial{Key: key, Attrs: attrs, Stats: enc})
		}
	}
	return out
}

// MoveTo returns ps moved to the 5-minute window starting at start.
func MoveTo(ps []sink.Partial, start time.Time) []sink.Partial {
	out := make([]sink.Partial, len(ps))
	for i, p := range ps {
		p.WindowStart, p.WindowEnd = start, start.Add(windowSize)
		out[i] = p
	}
	return out
}

// Calls returns the WriteClose calls that close the window starting at start over calls
// calls: call g carries the partials of the partitions p with p % calls == g. With ownCalls
// a call holds only those partitions' batches (each call is another consumer's); otherwise
// every call holds every partition's, the others' progress short of the window's end (one
// consumer's ticks).
func (w Workload) Calls(start time.Time, calls int, ownCalls bool) [][]sink.CloseBatch {
	end := start.Add(windowSize)
	out := make([][]sink.CloseBatch, calls)
	for g := range calls {
		for p := range w.Partials {
			src := sink.TopicPartition{Topic: sinkfixture.Topic, Partition: int32(p)}
			switch {
			case p%calls == g:
				out[g] = append(out[g], sink.CloseBatch{Source: src, ClosedThrough: end.Add(time.Duration(g) * time.Second), Partials: MoveTo(w.Partials[p], start)})
			case ownCalls:
			case p%calls < g:
				out[g] = append(out[g], sink.CloseBatch{Source: src, ClosedThrough: end.Add(time.Duration(g) * time.Second)})
			default:
				out[g] = append(out[g], sink.CloseBatch{Source: src, ClosedThrough: end.Add(-time.Minute)})
			}
		}
	}
	return out
}

// LayoutCases are the shapes in which a window's closes reach a sink, for benchmarks of
// close writes:
//
//   - aligned: one consumer whose partitions close the window at the same tick: one
//     WriteClose call with every partition's batch;
//   - straddled: one consumer whose partitions close it over two ticks (0, 2, 4 at the
//     first, 1, 3, 5 at the second), each tick one call with all six partitions' batches;
//   - consumers=N: N consumers, each owning every Nth partition, closing the window one
//     after another, each with one call holding its own partitions' batches.
var LayoutCases = []struct {
	Name              string
	Partitions, Calls int
	OwnCalls          bool // each call holds only its own partitions' batches (several consumers)
}{
	{"aligned", 6, 1, false},
	{"straddled", 6, 2, false},
	{"consumers=2", 6, 2, true},
	{"consumers=3", 6, 3, true},
	{"consumers=3/partitions=12", 12, 3, true},
}

// WriteWindows is the timed loop of a close benchmark: it registers the workload's
// partitions, then closes b.N windows, window i from data[i % len(data)] in calls WriteClose
// calls ([Workload.Calls]), the timer running only around the calls. It returns the merged
// rows the windows hold.
func WriteWindows(ctx context.Context, b *testing.B, w sink.WindowWriter, data []Workload, calls int, ownCalls bool) int {
	b.Helper()
	tps := make([]sink.CloseBatch, len(data[0].Partials))
	for p := range tps {
		tps[p] = sink.CloseBatch{Source: sink.TopicPartition{Topic: sinkfixture.Topic, Partition: int32(p)}}
	}
	if err := w.WriteClose(ctx, tps...); err != nil {
		b.Fatal(err)
	}
	rows := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		load := data[i%len(data)]
		batches := load.Calls(sinkfixture.Start().Add(time.Duration(i)*windowSize), calls, ownCalls)
		rows += len(load.Merged)
		b.StartTimer()
		for _, call := range batches {
			if err := w.WriteClose(ctx, call...); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	return rows
}

// UpsertFleet is the timed loop of a state benchmark: b.N batches of rows last-write-wins
// rows of the [Latest] table over a fleet of fleet vehicles (inserts first, then mostly
// updates), the timer running only around the calls. It reports rows/s.
func UpsertFleet(ctx context.Context, b *testing.B, w sink.StateWriter, rows, fleet int) {
	b.Helper()
	ids := make([]string, fleet)
	for i := range ids {
		ids[i] = fmt.Sprintf("veh-%05d", i)
	}
	batch := make([]sink.StateRow, rows)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		at := sinkfixture.Start().Add(time.Duration(i) * time.Second)
		for k := range batch {
			batch[k] = sink.StateRow{Table: sinkfixture.StateTable, Key: []any{ids[(i*rows+k*7)%fleet]}, ObservedAt: at,
				Values: []any{fmt.Sprintf("trip-%d", k%300), float64(k % 600), int64(k % 40)}}
		}
		b.StartTimer()
		if err := w.UpsertLatest(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
}

// windowSize is the suite's window: 5 minutes.
const windowSize = 5 * time.Minute
