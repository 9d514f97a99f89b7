package window

import (
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"syscall"
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

// benchEvent refers to its keys by index into benchWorkload's key tables, so that the
// million events of the workload hold no pointers: the collector would otherwise scan
// them on every cycle, a cost a real pipeline does not have.
type benchEvent struct {
	at        time.Duration // since the start of the cycle
	delay     float64
	partition uint16
	ids       [4]uint16 // line, station, operator, network
}

type benchWork struct {
	evs  []benchEvent
	keys [4][]benchKey // by dimension, then id
}

func (w *benchWork) stringKeys(e *benchEvent, dst *[4]benchKey) []benchKey {
	for d, id := range e.ids {
		dst[d] = w.keys[d][id]
	}
	return dst[:]
}

func (w *benchWork) intKeys(e *benchEvent, dst *[4]benchIntKey) []benchIntKey {
	for d, id := range e.ids {
		dst[d] = benchIntKey{uint8(d), uint32(id)}
	}
	return dst[:]
}

func benchWorkload() *benchWork {
	r := rand.New(rand.NewPCG(42, 42))
	w := &benchWork{}
	for d, dim := range []struct {
		prefix string
		n      int
	}{{"line:", benchLines}, {"stop:", benchStations}, {"op:", benchOperators}, {"net:", benchNetworks}} {
		w.keys[d] = make([]benchKey, dim.n)
		for i := range w.keys[d] {
			w.keys[d][i] = benchKey{uint8(d), dim.prefix + strconv.Itoa(i)}
		}
	}
	step := DefaultSize / benchEventsPerWindow * benchPartitions
	w.evs = make([]benchEvent, benchEvents)
	for i := range w.evs {
		vehicle := r.IntN(20000)
		line := vehicle % benchLines
		op := line % benchOperators
		jitter := time.Duration(r.IntN(30)) * time.Second // arrives up to 30 s out of order
		w.evs[i] = benchEvent{
			partition: uint16(vehicle % benchPartitions),
			at:        time.Duration(i)*step/benchPartitions - jitter,
			delay:     math.Round(r.ExpFloat64()*120 - 30),
			ids:       [4]uint16{uint16(line), uint16(r.IntN(benchStations)), uint16(op), uint16(op % benchNetworks)},
		}
	}
	return w
}

func benchWindows[K comparable](b *testing.B) []*Windows[K] {
	ws := make([]*Windows[K], benchPartitions)
	for i := range ws {
		w, err := New(Config[K]{})
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
	b.Run("string-keys", func(b *testing.B) { benchAddKeys(b, evs.evs, evs.stringKeys, false) })
	b.Run("int-keys", func(b *testing.B) { benchAddKeys(b, evs.evs, evs.intKeys, false) })
	b.Run("string-keys+serialize", func(b *testing.B) { benchAddKeys(b, evs.evs, evs.stringKeys, true) })
}

func benchAddKeys[K comparable](b *testing.B, evs []benchEvent, keys func(*benchEvent, *[4]K) []K, serialize bool) {
	var buf []byte
	var kbuf [4]K
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
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		e := &evs[i%len(evs)]
		at := e.at + time.Duration(i/len(evs))*cycle
		p := e.partition
		if err := ws[p].AddKeys(base.Add(at), e.delay, keys(e, &kbuf)...); err != nil {
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
	// CPU time is less disturbed than wall time by other processes on a shared machine.
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/event")
}

// cpuTime returns the user and system CPU time used by the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// fillOneWindow adds one 5-minute window of the workload (about benchEventsPerWindow
// events per partition) to ws, all in the same window.
func fillOneWindow(b *testing.B, ws []*Windows[benchKey], work *benchWork) {
	b.Helper()
	evs := work.evs
	var kbuf [4]benchKey
	base := time.Date(2024, 5, 1, 6, 0, 0, 0, time.UTC)
	for i := range evs[:benchEventsPerWindow*benchPartitions] {
		e := &evs[i]
		at := e.at % DefaultSize
		if at < 0 {
			at += DefaultSize
		}
		if err := ws[e.partition].AddKeys(base.Add(at), e.delay, work.stringKeys(e, &kbuf)...); err != nil {
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
	var cpu time.Duration
	buf := make([]byte, 0, 1<<16)
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ws := benchWindows[benchKey](b)
		fillOneWindow(b, ws, evs)
		runtime.GC() // the fill's garbage is not the close's cost
		b.StartTimer()
		cpu0 := cpuTime()
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
		cpu += cpuTime() - cpu0
	}
	b.StopTimer()
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(partials), "cpu-ns/partial")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(partials), "ns/partial")
	b.ReportMetric(float64(bytes)/float64(partials), "B/partial")
}

// BenchmarkMerge12 merges the 12 partials of one key decoded from bytes, as the sink
// does: a hot key whose partials are digests, and a typical key whose partials are exact;
// and the 6 exact partials (40 values each) of a busier key of a 6-partition topic.
func BenchmarkMerge12(b *testing.B) {
	for _, tc := range []struct {
		name     string
		n, parts int
	}{{"digest", 2000, benchPartitions}, {"exact", 10, benchPartitions}, {"exact-6", 40, 6}} {
		b.Run(tc.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 1))
			parts := make([]*Stats, tc.parts)
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
				_ = m.Quantile(Linear, 0.9)
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
