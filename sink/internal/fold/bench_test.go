package fold_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/fold"
	"github.com/streamledger/streamledger/window"
)

// BenchmarkFold measures the client side of the call that completes a window: six
// partitions' closes of keys keys (a few values each) prepared, planned and folded into
// merged rows and the folded row, without storing a partial, as a tick of a caught-up
// consumer does, the rows made in chunks of 8,192 keys as the Postgres sink asks for them.
// Each key is in every partition, or (disjoint) in one partition only, as where the topic is
// keyed by what the aggregates are. ns/row is per merged row.
func BenchmarkFold(b *testing.B) {
	const sources, chunk = 6, 8192
	for _, tc := range []struct {
		keys     int
		disjoint bool
	}{{1000, false}, {20000, false}, {20000, true}} {
		keys := tc.keys
		name := fmt.Sprintf("keys=%d", keys)
		if tc.disjoint {
			name += "/disjoint"
		}
		b.Run(name, func(b *testing.B) {
			batches := foldBatches(b, sources, keys, tc.disjoint)
			registered := make([]fold.Progress, sources)
			for i := range registered {
				registered[i] = fold.Progress{Source: batches[i].Source, ClosedThrough: t0}
			}
			z := newCodec(b)
			b.ReportAllocs()
			for b.Loop() {
				p := planOf(b, z, batches, registered, nil)
				rows := 0
				folded, err := p.Merged(chunk, func(rs []fold.Row, _ bool) error { rows += len(rs); return nil })
				if err != nil {
					b.Fatal(err)
				}
				if rows != keys || len(folded) != 1 {
					b.Fatalf("%d merged rows and %d folded, want %d and 1", rows, len(folded), keys)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*keys), "ns/row")
		})
	}
}

// foldBatches returns one close batch per source, each with a partial of every key, or
// (disjoint) of every key k with k%sources equal to the source's index.
func foldBatches(b *testing.B, sources, keys int, disjoint bool) []sink.CloseBatch {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]sink.CloseBatch, sources)
	for s := range out {
		out[s] = sink.CloseBatch{Source: src("a", int32(s)), ClosedThrough: end0}
		for k := range keys {
			if disjoint && k%sources != s {
				continue
			}
			st := window.NewStats()
			for range 1 + r.IntN(4) {
				st.Add(float64(r.IntN(600)))
			}
			data, err := st.MarshalBinary()
			if err != nil {
				b.Fatal(err)
			}
			out[s].Partials = append(out[s].Partials, sink.Partial{Key: sink.Key{WindowStart: t0, Dimension: "stop",
				DimensionID: fmt.Sprintf("s%05d", k)}, WindowEnd: end0, Stats: data})
		}
		// A window's partials come in the order its keys were first seen, not by key.
		r.Shuffle(len(out[s].Partials), func(i, j int) {
			out[s].Partials[i], out[s].Partials[j] = out[s].Partials[j], out[s].Partials[i]
		})
	}
	return out
}

// BenchmarkFoldStored measures the call that completes a window whose partials four of six
// partitions stored earlier as compact rows, read back as their blobs (as the Postgres sink
// reads them): the stored entries decoded, merged with the call's two partitions' and folded,
// the rows made in chunks of 8,192 keys. live-MB is the live heap while the first chunk's
// rows are written, beyond what the call's input holds, measured once outside the timing.
func BenchmarkFoldStored(b *testing.B) {
	const sources, stored, keys, chunk = 6, 4, 50000, 8192
	batches := foldBatches(b, sources, keys, false)
	z := newCodec(b)
	progress := make([]fold.Progress, sources)
	for i := range progress {
		progress[i] = fold.Progress{Source: batches[i].Source, ClosedThrough: t0}
	}
	p := planOf(b, z, batches[:stored], progress, nil)
	if len(p.Partials) != stored {
		b.Fatalf("%d compact rows, want %d", len(p.Partials), stored)
	}
	rows := make([]fold.Partials, stored)
	for i, cp := range p.Partials {
		blob, err := z.Encode(nil, spec.Attributes, fold.Blob{Entries: cp.Entries})
		if err != nil {
			b.Fatal(err)
		}
		rows[i] = fold.Partials{Start: cp.Start, End: cp.End, Source: cp.Source, Blob: blob}
		progress[i].ClosedThrough = end0
	}
	fold1 := func(measure func()) {
		p := planOf(b, z, batches[stored:], progress, rows)
		n := 0
		folded, err := p.Merged(chunk, func(rs []fold.Row, _ bool) error {
			if n == 0 && measure != nil {
				measure()
			}
			n += len(rs)
			return nil
		})
		if err != nil || n != keys || len(folded) != 1 {
			b.Fatalf("%d merged rows and %d folded, want %d and 1 (%v)", n, len(folded), keys, err)
		}
	}
	base := liveHeap()
	var live uint64
	fold1(func() { live = liveHeap() - base })
	b.ReportAllocs()
	for b.Loop() {
		fold1(nil)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*keys), "ns/row")
	b.ReportMetric(float64(live)/(1<<20), "live-MB")
}

// planOf returns the plan of a call of batches, after the stored progress and compact rows.
func planOf(b *testing.B, z *fold.Codec, batches []sink.CloseBatch, progress []fold.Progress, rows []fold.Partials) *fold.Plan {
	c, err := fold.NewCall(z, spec, batches)
	if err != nil {
		b.Fatal(err)
	}
	c.SetProgress(progress, []string{"a"})
	p, err := c.Plan(rows, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// liveHeap returns the heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
