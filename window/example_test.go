package window_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/streamledger/streamledger/window"
)

func ExampleWindows() {
	// One Windows per source partition; keys here are "dimension:id" strings.
	w, err := window.New(window.Config[string]{Size: 5 * time.Minute})
	if err != nil {
		panic(err)
	}
	t0 := time.Date(2024, 5, 1, 8, 0, 0, 0, time.UTC)
	delays := []struct {
		at    time.Duration
		delay float64
	}{{10 * time.Second, 30}, {70 * time.Second, 90}, {4 * time.Minute, 60}, {6 * time.Minute, 0}}
	for _, d := range delays {
		// One event, four dimensions: the window is computed once.
		if err := w.AddKeys(t0.Add(d.at), d.delay, "line:GVB:17", "operator:GVB"); err != nil {
			panic(err)
		}
	}
	// The partition watermark reached 08:05: the first window closes.
	for _, p := range w.Close(t0.Add(5 * time.Minute)) {
		fmt.Printf("%s-%s %-12s count=%d mean=%.0f min=%.0f max=%.0f p90=%.0f\n",
			p.Start.Format("15:04"), p.End.Format("15:04"), p.Key, p.Stats.Count(),
			p.Stats.Mean(), p.Stats.Min(), p.Stats.Max(), p.Stats.Quantile(window.Linear, 0.9))
	}
	// An event for the closed window is late.
	err = w.Add(t0.Add(4*time.Minute), "line:GVB:17", 10)
	fmt.Println(errors.Is(err, window.ErrLate))
	// Output:
	// 08:00-08:05 line:GVB:17  count=3 mean=60 min=30 max=90 p90=84
	// 08:00-08:05 operator:GVB count=3 mean=60 min=30 max=90 p90=84
	// true
}

func ExampleBounds() {
	start, end := window.Bounds(time.Date(2024, 5, 1, 10, 7, 30, 0, time.FixedZone("CEST", 2*3600)), 5*time.Minute)
	fmt.Println(start, end)
	// Output: 2024-05-01 08:05:00 +0000 UTC 2024-05-01 08:10:00 +0000 UTC
}

func ExampleMerge() {
	// Partials of one (window, key) from three source partitions, as stored by a sink.
	var stored [][]byte
	for p, vals := range [][]float64{{30, 60}, {90}, {0, 120, 45}} {
		s := window.NewStats()
		for _, v := range vals {
			if err := s.Add(v); err != nil {
				panic(err)
			}
		}
		b, err := s.MarshalBinary()
		if err != nil {
			panic(err)
		}
		fmt.Printf("partition %d: %d bytes\n", p, len(b))
		stored = append(stored, b)
	}
	parts := make([]*window.Stats, len(stored))
	for i, b := range stored {
		parts[i] = window.NewStats()
		if err := parts[i].UnmarshalBinary(b); err != nil {
			panic(err)
		}
	}
	m, err := window.Merge(parts...) // a fixed order, e.g. by (topic, partition)
	if err != nil {
		panic(err)
	}
	fmt.Printf("count=%d mean=%.1f min=%.0f max=%.0f p90=%.0f exact=%t\n",
		m.Count(), m.Mean(), m.Min(), m.Max(), m.Quantile(window.Linear, 0.9), m.Exact())
	// Output:
	// partition 0: 13 bytes
	// partition 1: 13 bytes
	// partition 2: 14 bytes
	// count=6 mean=57.5 min=0 max=120 p90=105 exact=true
}

func ExampleStats_UnmarshalBinary() {
	var s window.Stats
	err := s.UnmarshalBinary([]byte{9, 0})
	fmt.Println(errors.Is(err, window.ErrVersion))
	fmt.Println(err)
	// Output:
	// true
	// window: unsupported stats encoding version: version byte 9, want 1
}

func ExampleWindows_Reset() {
	t0 := time.Date(2024, 5, 1, 8, 0, 0, 0, time.UTC)
	w, err := window.New(window.Config[string]{})
	if err != nil {
		panic(err)
	}
	_ = w.Add(t0.Add(time.Minute), "line:17", 30)
	_ = w.Close(t0.Add(5 * time.Minute)) // written to the sink: closed_through = 08:05
	_ = w.Add(t0.Add(6*time.Minute), "line:17", 45)

	// The partition is revoked: its open state is dropped.
	w.Reset()
	fmt.Println("open after revoke:", w.OpenKeys())

	// The next owner restores closed_through before replaying from the committed offset,
	// so a replayed event of the written window is late, not a fragment of a new partial.
	owner, err := window.New(window.Config[string]{})
	if err != nil {
		panic(err)
	}
	owner.Close(t0.Add(5 * time.Minute))
	fmt.Println(errors.Is(owner.Add(t0.Add(time.Minute), "line:17", 30), window.ErrLate))
	fmt.Println(owner.Add(t0.Add(6*time.Minute), "line:17", 45), owner.OpenKeys())
	// Output:
	// open after revoke: 0
	// true
	// <nil> 1
}

func ExampleQuantileMethod() {
	// Delays of one key in one window, in seconds.
	s := window.NewStats()
	for _, v := range []float64{30, 60, 60, 90, 120, 300} {
		if err := s.Add(v); err != nil {
			panic(err)
		}
	}
	// Linear is PostgreSQL's percentile_cont; NearestRank its percentile_disc, always one
	// of the values.
	for _, m := range []window.QuantileMethod{window.Linear, window.NearestRank} {
		fmt.Printf("%-12s p50=%g p90=%g\n", m, s.Quantile(m, 0.5), s.Quantile(m, 0.9))
	}
	// Output:
	// linear       p50=75 p90=210
	// nearest-rank p50=60 p90=300
}

func ExampleConfig_exactLimit() {
	// Keep up to 1,000 values per key exactly: quantiles of busier keys are t-digest
	// estimates. Every writer of the same aggregates, and the sink that merges them, uses
	// the same limit.
	w, err := window.New(window.Config[string]{ExactLimit: 1000})
	if err != nil {
		panic(err)
	}
	t0 := time.Date(2024, 5, 1, 8, 0, 0, 0, time.UTC)
	for i := range 1001 {
		if err := w.Add(t0, "busy", float64(i)); err != nil {
			panic(err)
		}
		if i < 1000 {
			_ = w.Add(t0, "quiet", float64(i))
		}
	}
	for _, p := range w.Close(t0.Add(5 * time.Minute)) {
		fmt.Printf("%s count=%d exact=%t\n", p.Key, p.Stats.Count(), p.Stats.Exact())
	}
	_, err = window.New(window.Config[string]{ExactLimit: window.MaxExactLimit + 1})
	fmt.Println(err)
	// Output:
	// busy count=1001 exact=false
	// quiet count=1000 exact=true
	// window: invalid config: Config.ExactLimit is 65537, want at most MaxExactLimit (65536), zero for the default 256, or negative for none
}
