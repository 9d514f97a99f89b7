package watermark_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/watermark"
)

func TestObserveWatermark(t *testing.T) {
	tests := []struct {
		name    string
		events  []time.Duration // event times, as offsets from t0
		wantWM  time.Duration   // expected wm(P), as offset from t0
		wantMax time.Duration
	}{
		{"one event", []time.Duration{3 * time.Minute}, time.Minute, 3 * time.Minute},
		{"in order", []time.Duration{time.Minute, 2 * time.Minute, 7 * time.Minute}, 5 * time.Minute, 7 * time.Minute},
		{"out of order keeps the max", []time.Duration{7 * time.Minute, time.Minute, 6 * time.Minute}, 5 * time.Minute, 7 * time.Minute},
		{"equal event times", []time.Duration{4 * time.Minute, 4 * time.Minute}, 2 * time.Minute, 4 * time.Minute},
		{"event before the epoch of the test", []time.Duration{-time.Hour}, -time.Hour - 2*time.Minute, -time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPartition(t, newFakeClock(t0), 0, 0)
			for _, e := range tt.events {
				p.Observe(at(e), t0)
			}
			assert.Equal(t, at(tt.wantWM), wmOf(t, p))
			maxET, ok := p.MaxEventTime()
			require.True(t, ok)
			assert.Equal(t, at(tt.wantMax), maxET)
		})
	}
}

func TestFreshPartitionHasNoWatermark(t *testing.T) {
	p := newPartition(t, newFakeClock(t0), 0, 0)
	_, ok := p.Watermark()
	assert.False(t, ok)
	_, ok = p.MaxEventTime()
	assert.False(t, ok)
	assert.False(t, p.IsLate(time.Time{}), "with wm unknown nothing is late, not even the oldest window")
	assert.False(t, p.Idle())
	assert.False(t, p.CaughtUp())
}

func TestWatermarkIsUTCWithoutMonotonicReading(t *testing.T) {
	ams, err := time.LoadLocation("Europe/Amsterdam")
	if err != nil {
		ams = time.FixedZone("CEST", 2*60*60)
	}
	p := newPartition(t, newFakeClock(t0), 0, 0)
	p.Observe(at(5*time.Minute).In(ams), t0)
	wm := wmOf(t, p)
	assert.Equal(t, time.UTC, wm.Location())
	assert.Equal(t, at(3*time.Minute), wm)

	// An event time carrying a monotonic reading (time.Now) must be stored without it,
	// so that later comparisons are on wall time only.
	q := newPartition(t, newFakeClock(t0), 0, 0)
	now := time.Now()
	q.Observe(now, now)
	wm = wmOf(t, q)
	assert.Equal(t, wm, wm.Round(0), "no monotonic reading")
	assert.True(t, wm.Equal(now.Add(-defaultLateness)))
}

func TestIsLate(t *testing.T) {
	// One event at 12:07 gives wm = 12:05.
	tests := []struct {
		name      string
		windowEnd time.Time
		want      bool
	}{
		{"window ending before wm", at(0), true},
		{"window ending exactly at wm", at(5 * time.Minute), true},
		{"window ending 1ns after wm", at(5*time.Minute + 1), false},
		{"next window", at(10 * time.Minute), false},
	}
	p := newPartition(t, newFakeClock(t0), 0, 0)
	p.Observe(at(7*time.Minute), t0)
	require.Equal(t, at(5*time.Minute), wmOf(t, p))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, p.IsLate(tt.windowEnd))
		})
	}
}

// The late test is against wm(P) before the event is applied: an event that
// itself moves wm past its own window's end is not late.
func TestIsLateBeforeApply(t *testing.T) {
	p := newPartition(t, newFakeClock(t0), 0, 0)
	p.Observe(at(5*time.Minute), t0) // wm 12:03

	e := at(9*time.Minute + 59*time.Second) // window [12:05, 12:10), moves wm to 12:07:59
	windowEnd := at(10 * time.Minute)
	assert.False(t, p.IsLate(windowEnd))
	p.Observe(e, t0)
	assert.Equal(t, at(7*time.Minute+59*time.Second), wmOf(t, p))

	late := at(4 * time.Minute) // window [12:00, 12:05): its end is now behind wm
	assert.True(t, p.IsLate(at(5*time.Minute)))
	p.Observe(late, t0)
	assert.Equal(t, at(7*time.Minute+59*time.Second), wmOf(t, p), "a late event does not lower wm")
}

// Decisions depend only on the partition's own sequence: feeding it again
// from scratch repeats every decision.
func TestDecisionsDependOnlyOnOwnSequence(t *testing.T) {
	seq := []time.Duration{1, 6, 2, 11, 4, 9, 13, 8, 3, 16, 10}
	decide := func(p *watermark.Partition) []bool {
		var out []bool
		for _, m := range seq {
			e := at(m * time.Minute)
			end := e.Truncate(5 * time.Minute).Add(5 * time.Minute)
			out = append(out, p.IsLate(end))
			p.Observe(e, t0)
		}
		return out
	}
	a := newPartition(t, newFakeClock(t0), 0, 0)
	b := newPartition(t, newFakeClock(t0), 0, 0)
	want := []bool{false, false, false, false, true, false, false, true, true, false, false}
	assert.Equal(t, want, decide(a))
	assert.Equal(t, want, decide(b))
}

// The per-event path must not allocate (the benchmarks report the same).
func TestPerEventPathDoesNotAllocate(t *testing.T) {
	p := newPartition(t, newFakeClock(t0), 0, 0)
	arrival := time.Now()
	e := t0
	allocs := testing.AllocsPerRun(1000, func() {
		e = e.Add(time.Second)
		_ = p.IsLate(e.Truncate(5 * time.Minute).Add(5 * time.Minute))
		p.Observe(e, arrival)
	})
	assert.Zero(t, allocs)
}

func TestEndOfInputRaisesOnly(t *testing.T) {
	p := watermark.NewPartition(watermark.Config{Lateness: time.Minute})
	base := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	assert.True(t, p.EndOfInput(base), "from unknown")
	wm, ok := p.Watermark()
	require.True(t, ok)
	assert.Equal(t, base, wm)
	p.Observe(base.Add(30*time.Second), base)
	wm, _ = p.Watermark()
	assert.Equal(t, base, wm, "an event below the end-of-input watermark does not lower it")
	assert.True(t, p.IsLate(base), "its window is late")
	assert.False(t, p.EndOfInput(base.Add(-time.Hour)), "never back")
	assert.True(t, p.EndOfInput(base.Add(5*time.Minute)))
	wm, _ = p.Watermark()
	assert.Equal(t, base.Add(5*time.Minute), wm)
}
