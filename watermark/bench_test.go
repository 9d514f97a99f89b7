package watermark_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/streamledger/streamledger/watermark"
)

// benchEvents returns n event times that mostly move forward, with one in
// four up to 3 minutes out of order, as a live feed does.
func benchEvents(n int) []time.Time {
	events := make([]time.Time, n)
	for i := range events {
		d := time.Duration(i) * 100 * time.Millisecond
		if i%4 == 3 {
			d -= time.Duration(i%180) * time.Second
		}
		events[i] = at(d)
	}
	return events
}

func BenchmarkObserve(b *testing.B) {
	events := benchEvents(1 << 12)
	p := newPartition(b, newFakeClock(t0), 0, 0)
	arrival := time.Now()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		p.Observe(events[i&(len(events)-1)], arrival)
		i++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/event")
}

func BenchmarkIsLate(b *testing.B) {
	events := benchEvents(1 << 12)
	ends := make([]time.Time, len(events))
	for i, e := range events {
		ends[i] = windowEnd(e)
	}
	p := newPartition(b, newFakeClock(t0), 0, 0)
	p.Observe(events[len(events)/2], t0) // about half the windows are late
	b.ReportAllocs()
	i, late := 0, 0
	for b.Loop() {
		if p.IsLate(ends[i&(len(ends)-1)]) {
			late++
		}
		i++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/event")
	if late == 0 {
		b.Fatal("no event was late: the benchmark measures nothing")
	}
}

// The per-event path as a consumer runs it: the late test, then Observe.
func BenchmarkDecideAndObserve(b *testing.B) {
	events := benchEvents(1 << 12)
	ends := make([]time.Time, len(events))
	for i, e := range events {
		ends[i] = windowEnd(e)
	}
	p := newPartition(b, newFakeClock(t0), 0, 0)
	arrival := time.Now()
	b.ReportAllocs()
	i, late := 0, 0
	for b.Loop() {
		j := i & (len(events) - 1)
		if p.IsLate(ends[j]) {
			late++
		}
		p.Observe(events[j], arrival)
		i++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/event")
	_ = late
}

// Tick and Min run once per poll batch over every assigned partition.
func BenchmarkSetTickMin(b *testing.B) {
	for _, n := range []int{16, 256} {
		b.Run(fmt.Sprintf("partitions=%d", n), func(b *testing.B) {
			clock := newFakeClock(t0)
			s := watermark.NewSet[int](watermark.Config{Clock: clock.Now})
			for k := range n {
				p, _ := s.Assign(k, watermark.RestorePoint{})
				p.Observe(at(time.Duration(k)*time.Second), t0)
				p.SetCaughtUp(k%2 == 0) // half of them go idle and advance on every tick
			}
			b.ReportAllocs()
			for b.Loop() {
				clock.Advance(time.Second)
				s.Tick()
				if _, ok := s.Min(); !ok {
					b.Fatal("min unknown")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/partition")
		})
	}
}
