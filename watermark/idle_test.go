package watermark_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/watermark"
)

const idleTimeout = 30 * time.Second

// Each case: one event at 12:07 (wm 12:05) arriving at wall time t0, then a
// report, then the clock moves by quiet and the partition ticks.
func TestIdleAdvance(t *testing.T) {
	event := at(7 * time.Minute)
	tests := []struct {
		name     string
		report   func(p *watermark.Partition) // nil: no report (not caught up)
		quiet    time.Duration
		wantIdle bool
		wantWM   time.Time
	}{
		{"never reported: not caught up, no advance however quiet", nil, time.Hour, false, at(5 * time.Minute)},
		{"behind the high watermark: no advance however quiet",
			func(p *watermark.Partition) { require.NoError(t, p.SetPosition(41, 42)) }, time.Hour, false, at(5 * time.Minute)},
		{"caught up but not quiet long enough",
			func(p *watermark.Partition) { require.NoError(t, p.SetPosition(42, 42)) }, idleTimeout - 1, false, at(5 * time.Minute)},
		{"caught up and quiet exactly the timeout",
			func(p *watermark.Partition) { require.NoError(t, p.SetPosition(42, 42)) }, idleTimeout,
			true, event.Add(idleTimeout - defaultLateness)},
		{"caught-up flag and quiet an hour",
			func(p *watermark.Partition) { p.SetCaughtUp(true) }, time.Hour,
			true, event.Add(time.Hour - defaultLateness)},
		{"caught up, then reported behind",
			func(p *watermark.Partition) { p.SetCaughtUp(true); p.SetCaughtUp(false) }, time.Hour, false, at(5 * time.Minute)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock(t0)
			p := newPartition(t, clock, 0, idleTimeout)
			p.Observe(event, clock.Now())
			if tt.report != nil {
				tt.report(p)
			}
			clock.Advance(tt.quiet)
			advanced := p.Tick()
			assert.Equal(t, tt.wantIdle, p.Idle())
			assert.Equal(t, tt.wantWM, wmOf(t, p))
			assert.Equal(t, tt.wantIdle, advanced, "an idle partition with data advances")
		})
	}
}

func TestIdleAdvanceFollowsFormulaAcrossTicks(t *testing.T) {
	clock := newFakeClock(t0)
	p := newPartition(t, clock, 2*time.Minute, idleTimeout)
	p.Observe(at(9*time.Minute), clock.Now())
	p.Observe(at(7*time.Minute), clock.Now().Add(time.Second)) // last message: arrives 1 s later, older event
	p.SetCaughtUp(true)

	lastArrival := t0.Add(time.Second)
	maxET := at(9 * time.Minute)
	for _, step := range []time.Duration{idleTimeout + time.Second, 5 * time.Second, 3 * time.Minute, time.Millisecond} {
		clock.Advance(step)
		require.True(t, p.Tick())
		require.True(t, p.Idle())
		want := maxET.Add(clock.now.Sub(lastArrival) - 2*time.Minute)
		assert.Equal(t, want, wmOf(t, p), "wm = maxEventTime + (now - last arrival) - lateness")
	}

	// A tick at the same instant changes nothing and reports no advance.
	before := wmOf(t, p)
	assert.False(t, p.Tick())
	assert.True(t, p.Idle())
	assert.Equal(t, before, wmOf(t, p))
}

func TestIdleRejoinAndLateAfterAdvance(t *testing.T) {
	clock := newFakeClock(t0)
	p := newPartition(t, clock, 0, idleTimeout)
	p.Observe(at(7*time.Minute), clock.Now()) // wm 12:05
	require.NoError(t, p.SetPosition(10, 10))

	clock.Advance(10 * time.Minute)
	require.True(t, p.Tick())
	// 12:07 + 10 min - 2 min = 12:15: windows [12:05, 12:10) and [12:10, 12:15) closed.
	require.Equal(t, at(15*time.Minute), wmOf(t, p))

	// A message for a window the advance closed is late, and the message rejoins.
	assert.True(t, p.IsLate(at(10*time.Minute)))
	assert.True(t, p.IsLate(at(15*time.Minute)))
	assert.False(t, p.IsLate(at(20*time.Minute)))
	p.Observe(at(8*time.Minute), clock.Now())
	assert.False(t, p.Idle(), "the next message rejoins")
	assert.False(t, p.CaughtUp(), "a message makes the caught-up report stale")
	assert.Equal(t, at(15*time.Minute), wmOf(t, p), "a late event never lowers wm")

	// Without a new report no tick makes it idle again, however long it is quiet.
	clock.Advance(time.Hour)
	assert.False(t, p.Tick())
	assert.False(t, p.Idle())

	// Reported caught up again: quiet is measured from the last message, and
	// the late event did raise the max event time to 12:08 (only wm stayed).
	maxET, _ := p.MaxEventTime()
	require.Equal(t, at(8*time.Minute), maxET)
	require.NoError(t, p.SetPosition(11, 11))
	assert.True(t, p.Tick())
	assert.Equal(t, at(8*time.Minute+time.Hour-2*time.Minute), wmOf(t, p))
}

// An advance computed from a later, older message may fall below wm: wm stays.
func TestIdleAdvanceNeverLowers(t *testing.T) {
	clock := newFakeClock(t0)
	p := newPartition(t, clock, 0, idleTimeout)
	p.Observe(at(7*time.Minute), clock.Now())
	p.SetCaughtUp(true)
	clock.Advance(time.Hour)
	require.True(t, p.Tick())
	high := wmOf(t, p)

	p.Observe(at(time.Minute), clock.Now()) // late; restarts the quiet clock
	p.SetCaughtUp(true)
	clock.Advance(idleTimeout)
	assert.False(t, p.Tick(), "12:07 + 30 s - 2 min is below wm")
	assert.True(t, p.Idle())
	assert.Equal(t, high, wmOf(t, p))
}

func TestTouchCountsForIdleness(t *testing.T) {
	clock := newFakeClock(t0)
	p := newPartition(t, clock, 0, idleTimeout)
	p.Observe(at(7*time.Minute), clock.Now())
	clock.Advance(idleTimeout)
	p.Touch(clock.Now()) // a message without event time, e.g. a dead letter
	p.SetCaughtUp(true)
	clock.Advance(idleTimeout - 1)
	assert.False(t, p.Tick(), "quiet is measured from the touch")
	assert.False(t, p.Idle())
	maxET, _ := p.MaxEventTime()
	assert.Equal(t, at(7*time.Minute), maxET, "touch does not move the event clock")

	clock.Advance(1)
	assert.True(t, p.Tick())
	// 12:07 + (now - touch) - 2 min, with now - touch = the timeout.
	assert.Equal(t, at(7*time.Minute+idleTimeout-2*time.Minute), wmOf(t, p))
}

func TestIdleWithoutData(t *testing.T) {
	clock := newFakeClock(t0)
	p := newPartition(t, clock, 0, idleTimeout) // created at t0
	require.NoError(t, p.SetPosition(0, 0))     // an empty partition
	clock.Advance(idleTimeout - 1)
	p.Tick()
	assert.False(t, p.Idle(), "quiet is measured from creation")
	clock.Advance(1)
	assert.False(t, p.Tick(), "no data: nothing to advance")
	assert.True(t, p.Idle())
	_, ok := p.Watermark()
	assert.False(t, ok)
}

func TestIdleAfterRestore(t *testing.T) {
	clock := newFakeClock(t0)
	p := newPartition(t, clock, 0, idleTimeout)
	clock.Advance(time.Hour) // time before the restore does not count
	require.NoError(t, p.Restore(watermark.RestorePoint{Metadata: at(5 * time.Minute)}))
	p.SetCaughtUp(true)
	clock.Advance(idleTimeout - 1)
	assert.False(t, p.Tick())
	assert.False(t, p.Idle())

	clock.Advance(time.Minute + 1)
	require.True(t, p.Tick())
	// maxEventTime = wm + lateness and the last arrival is the restore, so the
	// advance is wm + (now - restore).
	assert.Equal(t, at(5*time.Minute).Add(idleTimeout+time.Minute), wmOf(t, p))
}

// An idle advance recorded in progress and metadata at offset C makes a
// replay from C decide as the first run did, including the late ones.
func TestIdleAdvanceReplay(t *testing.T) {
	clock := newFakeClock(t0)
	first := newPartition(t, clock, 0, idleTimeout)
	first.Observe(at(7*time.Minute), clock.Now())
	require.NoError(t, first.SetPosition(1, 1))
	clock.Advance(6 * time.Minute)
	require.True(t, first.Tick())
	committed := wmOf(t, first) // written to progress before offset 1 is decided
	require.Equal(t, at(11*time.Minute), committed)

	later := []time.Duration{9, 12, 8, 16, 14}
	var want []bool
	for _, m := range later {
		e := at(m * time.Minute)
		want = append(want, first.IsLate(e.Truncate(5*time.Minute).Add(5*time.Minute)))
		first.Observe(e, clock.Now())
	}
	assert.Equal(t, []bool{true, false, true, false, false}, want)

	replay := newPartition(t, newFakeClock(t0.Add(24*time.Hour)), 0, idleTimeout) // another day, another clock
	require.NoError(t, replay.Restore(watermark.RestorePoint{Metadata: committed, ClosedThrough: at(10 * time.Minute)}))
	for i, m := range later {
		e := at(m * time.Minute)
		assert.Equal(t, want[i], replay.IsLate(e.Truncate(5*time.Minute).Add(5*time.Minute)), "event %d", i)
		replay.Observe(e, t0)
	}
	assert.Equal(t, wmOf(t, first), wmOf(t, replay))
}

func TestSetPositionInvalid(t *testing.T) {
	tests := []struct {
		name          string
		position, hwm int64
	}{
		{"position above high watermark", 11, 10},
		{"negative position", -1, 10},
		{"negative high watermark", 0, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock(t0)
			p := newPartition(t, clock, 0, idleTimeout)
			p.Observe(at(7*time.Minute), clock.Now())
			require.NoError(t, p.SetPosition(10, 10))

			err := p.SetPosition(tt.position, tt.hwm)
			require.ErrorIs(t, err, watermark.ErrInvalidPosition)
			assert.ErrorContains(t, err, "want 0 <= position <= high watermark")
			assert.True(t, p.CaughtUp(), "state unchanged")
		})
	}
}

// The system clock (nil Config.Clock) under synctest's fake time: the idle
// timeout and the advance are measured with time.Now, deterministically.
func TestIdleAdvanceSystemClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := watermark.NewPartition(watermark.Config{})
		event := at(7 * time.Minute)
		p.Observe(event, time.Now())
		require.NoError(t, p.SetPosition(5, 5))

		time.Sleep(defaultIdleTimeout - time.Nanosecond)
		assert.False(t, p.Tick())
		time.Sleep(time.Nanosecond)
		require.True(t, p.Tick())
		assert.Equal(t, event.Add(defaultIdleTimeout-defaultLateness), wmOf(t, p))

		time.Sleep(time.Hour)
		require.True(t, p.Tick())
		assert.Equal(t, event.Add(defaultIdleTimeout+time.Hour-defaultLateness), wmOf(t, p))
	})
}
