package window

import (
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// The benchmark workload models the Dutch public-transport pipeline at its morning peak:
// 12 source partitions (vehicles hashed to partitions), every event aggregated under
// four dimensions (line, station, operator, network) drawn from 7,000 keys in all, so
// that each partition's Windows sees most of the keys, and delays in whole seconds.
const (
	benchPartitions      = 12
	benchLines           = 1500
	benchStations        = 5400
	benchOperators       = 80
	benchNetworks        = 20
	benchEvents          = 1 << 20
	benchEventsPerWindow = 25000 // per partition, per 5-minute window
)

// benchKey is the natural key of the pipeline: a dimension and the id as it arrives.
type benchKey struct {
	Dim uint8
	ID  string
}

// benchIntKey is the same key with the id interned to a number, which hashes faster.
type benchIntKey struct {
	Dim uint8
	ID  uint32
}

type benchEvent struct {
	partition int
	at        time.Duration // since the start of the cycle
	delay     float64
	keys      [4]benchKey
	intKeys   [4]benchIntKey
}

func benchWorkload() []benchEvent {
	r := rand.New(rand.NewPCG(42, 42))
	ids := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = prefix + strconv.Itoa(i)
		}
		return out
	}
	lines, stations := ids("line:", benchLines), ids("stop:", benchStations)
	operators, networks := ids("op:", benchOperators), ids("net:", benchNetworks)
	step := DefaultSize / benchEventsPerWindow * benchPartitions
	evs := make([]benchEvent, benchEvents)
	for i := range evs {
		vehicle := r.IntN(20000)
		line := vehicle % benchLines
		op := line % benchOperators
		jitter := time.Duration(r.IntN(30)) * time.Second // arrives up to 30 s out of order
		evs[i] = benchEvent{
			partition: vehicle % benchPartitions,
			at:        time.Duration(i)*step/benchPartitions - jitter,
			delay:     math.Round(r.ExpFloat64()*120 - 30),
		}
		station := r.IntN(benchStations)
		evs[i].keys = [4]benchKey{
			{0, lines[line]}, {1, stations[station]}, {2, operators[op]}, {3, networks[op%benchNetworks]},
		}
		evs[i].intKeys = [4]benchIntKey{
			{0, uint32(line)}, {1, uint32(station)}, {2, uint32(op)}, {3, uint32(op % benchNetworks)},
		}
	}
	return evs
}

func benchWindows[K comparable](b *testing.B) []*Windows[K] {
	ws := make([]*Windows[K], benchPartitions)
	for i := range ws {
		w, err := New[K](Config{})
		if err != nil {
			b.Fatal(err)
		}
		ws[i] = w
	}
	return ws
}

// BenchmarkWindowsAddKeys measures steady-state throughput: events with four keys each,
// spread over 12 partitions, with windows closing as the watermark (max event time minus
// 120 s) passes their end. string-keys uses benchKey, int-keys benchIntKey; both
// produce the partials but do not serialize them, string-keys+serialize also serializes
// every partial, end to end.
func BenchmarkWindowsAddKeys(b *testing.B) {
	evs := benchWorkload()
	strKeys := func(e *benchEvent) []benchKey { return e.keys[:] }
	b.Run("string-keys", func(b *testing.B) { benchAddKeys(b, evs, strKeys, false) })
	b.Run("int-keys", func(b *testing.B) {
		benchAddKeys(b, evs, func(e *benchEvent) []benchIntKey { return e.intKeys[:] }, false)
	})
	b.Run("string-keys+serialize", func(b *testing.B) { benchAddKeys(b, evs, strKeys, true) })
}

func benchAddKeys[K comparable](b *testing.B, evs []benchEvent, keys func(*benchEvent) []K, serialize bool) {
	var buf []byte
	ws := benchWindows[K](b)
	base := time.Date(2024, 5, 1, 6, 0, 0, 0, time.UTC)
	// One pass over the workload spans a whole number of windows, so time keeps advancing.
	cycle := (evs[len(evs)-1].at/DefaultSize + 2) * DefaultSize
	var maxAt [benchPartitions]time.Duration
	var nextClose [benchPartitions]time.Duration
	for i := range nextClose {
		nextClose[i] = DefaultSize
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e := &evs[i%len(evs)]
		at := e.at + time.Duration(i/len(evs))*cycle
		p := e.partition
		if err := ws[p].AddKeys(base.Add(at), e.delay, keys(e)...); err != nil {
			b.Fatal(err)
		}
		if at > maxAt[p] {
			maxAt[p] = at
			if wm := at - 2*time.Minute; wm >= nextClose[p] {
				for _, part := range ws[p].Close(base.Add(wm)) {
					if serialize {
						buf, _ = part.Stats.AppendBinary(buf[:0])
					}
				}
				nextClose[p] = (wm/DefaultSize + 1) * DefaultSize
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/event")
}

// fillOneWindow adds one 5-minute window of the workload (about benchEventsPerWindow
// events per partition) to ws, all in the same window.
func fillOneWindow(b *testing.B, ws []*Windows[benchKey], evs []benchEvent) {
	b.Helper()
	base := time.Date(2024, 5, 1, 6, 0, 0, 0, time.UTC)
	for i := range evs[:benchEventsPerWindow*benchPartitions] {
		e := &evs[i]
		at := e.at % DefaultSize
		if at < 0 {
			at += DefaultSize
		}
		if err := ws[e.partition].AddKeys(base.Add(at), e.delay, e.keys[:]...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWindowsMemory reports the heap bytes per open (window, key) aggregate after one
// window of the workload, measured with runtime.MemStats around the fill, and the
// average number of values per key (8 bytes each of the total while exact).
func BenchmarkWindowsMemory(b *testing.B) {
	evs := benchWorkload()
	var perKey, keys, values float64
	for i := 0; i < b.N; i++ {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		ws := benchWindows[benchKey](b)
		fillOneWindow(b, ws, evs)
		runtime.GC()
		runtime.ReadMemStats(&after)
		n, vals := 0, int64(0)
		for _, w := range ws {
			n += w.OpenKeys()
			for _, o := range w.open {
				for i := range o.stats {
					vals += o.stats[i].Count()
				}
			}
		}
		perKey = float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
		keys = float64(n)
		values = float64(vals) / float64(n)
		runtime.KeepAlive(ws)
	}
	b.ReportMetric(perKey, "B/key")
	b.ReportMetric(keys, "keys")
	b.ReportMetric(values, "values/key")
}

// BenchmarkCloseSerialize measures closing one full window of 12 partitions and
// serializing every partial, per partial.
func BenchmarkCloseSerialize(b *testing.B) {
	evs := benchWorkload()
	end := time.Date(2024, 5, 1, 6, 5, 0, 0, time.UTC)
	b.ReportAllocs()
	var partials, bytes int
	buf := make([]byte, 0, 1<<16)
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ws := benchWindows[benchKey](b)
		fillOneWindow(b, ws, evs)
		runtime.GC() // the fill's garbage is not the close's cost
		b.StartTimer()
		for _, w := range ws {
			for _, p := range w.Close(end) {
				var err error
				buf, err = p.Stats.AppendBinary(buf[:0])
				if err != nil {
					b.Fatal(err)
				}
				partials++
				bytes += len(buf)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(partials), "ns/partial")
	b.ReportMetric(float64(bytes)/float64(partials), "B/partial")
}

// BenchmarkMerge12 merges the 12 partials of one key decoded from bytes, as the sink
// does: a hot key whose partials are digests, and a typical key whose partials are exact.
func BenchmarkMerge12(b *testing.B) {
	for _, tc := range []struct {
		name string
		n    int
	}{{"digest", 2000}, {"exact", 10}} {
		b.Run(tc.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 1))
			parts := make([]*Stats, benchPartitions)
			for i := range parts {
				s := NewStats()
				for range tc.n {
					if err := s.Add(math.Round(r.ExpFloat64()*120 - 30)); err != nil {
						b.Fatal(err)
					}
				}
				enc, err := s.MarshalBinary()
				if err != nil {
					b.Fatal(err)
				}
				parts[i] = NewStats()
				if err := parts[i].UnmarshalBinary(enc); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				m, err := Merge(parts...)
				if err != nil {
					b.Fatal(err)
				}
				_ = m.Quantile(0.9)
			}
		})
	}
}

// BenchmarkStatsAdd measures filling one Stats with n values and sealing it (folding
// its buffer, as serialization does), per value: n=10 stays exact, the others are digests
// of the sizes a hot key reaches in one window (an operator, a network) and beyond.
func BenchmarkStatsAdd(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	vals := make([]float64, 1<<16)
	for i := range vals {
		vals[i] = math.Round(r.ExpFloat64()*120 - 30)
	}
	for _, n := range []int{10, 300, 1250, 1 << 16} {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			var sc scratch
			b.ReportAllocs()
			for b.Loop() {
				var s Stats
				for _, v := range vals[:n] {
					s.add(v, &sc)
				}
				s.seal()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/value")
		})
	}
}
