package watermark_test

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/watermark"
)

// model is what a partition must know, kept independently of the package.
type model struct {
	wm, maxET       time.Time
	wmKnown, hasMax bool
	since           time.Time
	caughtUp, idle  bool
	fresh           bool
}

func (m *model) raise(w time.Time) bool {
	if m.wmKnown && !w.After(m.wm) {
		return false
	}
	m.wm, m.wmKnown = w, true
	return true
}

func (m *model) arrive(now time.Time) {
	m.fresh, m.idle, m.caughtUp, m.since = false, false, false, now
}

// runProgram interprets prog as a sequence of operations on one partition
// and checks after each one that wm(P) never goes back, that the late test
// agrees with it, and that the partition matches the model (which applies the
// idle rules and the advance formula literally). It returns how many idle
// advances happened, so callers can check that programs reach that state.
func runProgram(t *testing.T, prog []byte) (advances int) {
	t.Helper()
	const lateness = 2 * time.Minute
	clock := newFakeClock(t0)
	p := newPartition(t, clock, lateness, idleTimeout)
	m := model{since: t0, fresh: true}

	event := func(arg int64) { // up to ~9 h either side of t0, at a 1 s grain
		e := at(time.Duration(arg) * time.Second)
		p.Observe(e, clock.Now())
		m.arrive(clock.Now())
		if !m.hasMax || e.After(m.maxET) {
			m.maxET, m.hasMax = e, true
			m.raise(e.Add(-lateness))
		}
	}
	report := func(arg int64) { // caught up, behind, or invalid
		pos := arg&0xff - 8
		hwm := pos + arg>>8&3 - 1
		err := p.SetPosition(pos, hwm)
		if pos < 0 || pos > hwm {
			require.ErrorIs(t, err, watermark.ErrInvalidPosition)
			return
		}
		require.NoError(t, err)
		m.caughtUp = pos == hwm
		m.idle = m.idle && m.caughtUp
	}
	tick := func() {
		got := p.Tick()
		want := false
		if m.caughtUp {
			quiet := clock.Now().Sub(m.since)
			if m.idle || quiet >= idleTimeout {
				m.idle = true
				want = m.hasMax && m.raise(m.maxET.Add(quiet-lateness))
			}
		} else {
			m.idle = false
		}
		require.Equal(t, want, got, "Tick result")
		if got {
			advances++
		}
	}
	restore := func(arg int64) { // allowed only on a fresh partition
		from := watermark.RestorePoint{Metadata: at(time.Duration(arg) * time.Second)}
		if arg%3 == 0 {
			from.Metadata = time.Time{}
		}
		if arg%2 == 0 {
			from.ClosedThrough = at(time.Duration(arg/2) * time.Second)
		}
		err := p.Restore(from)
		if !m.fresh {
			require.ErrorIs(t, err, watermark.ErrNotFresh)
			return
		}
		require.NoError(t, err)
		m.fresh, m.idle, m.since = false, false, clock.Now()
		w := from.Metadata
		if from.ClosedThrough.After(w) {
			w = from.ClosedThrough
		}
		if !w.IsZero() {
			m.raise(w)
			m.maxET, m.hasMax = w.Add(lateness), true
		}
	}

	for len(prog) >= 3 {
		op, arg := prog[0], int64(int16(binary.LittleEndian.Uint16(prog[1:3])))
		prog = prog[3:]
		prevWM, prevKnown := p.Watermark()
		prevMax, _ := p.MaxEventTime()

		switch op % 8 {
		case 0, 1:
			event(arg)
		case 2: // a message without event time
			p.Touch(clock.Now())
			m.arrive(clock.Now())
		case 3: // the clock moves, sometimes backwards
			clock.Advance(time.Duration(arg) * 100 * time.Millisecond)
		case 4:
			report(arg)
		case 5:
			tick()
		case 6: // a quiet spell: caught up, the clock moves on, a tick
			report(arg&^0x300 | 0x100)
			clock.Advance(time.Duration(arg&0xff) * time.Second)
			tick()
		case 7:
			restore(arg)
		}

		gotWM, known := p.Watermark()
		require.Equal(t, m.wmKnown, known)
		require.True(t, gotWM.Equal(m.wm), "wm %v, model %v", gotWM, m.wm)
		require.Equal(t, m.idle, p.Idle())
		require.Equal(t, m.caughtUp, p.CaughtUp())
		if prevKnown {
			require.True(t, known, "a known wm stays known")
			require.False(t, gotWM.Before(prevWM), "wm went back from %v to %v", prevWM, gotWM)
		}
		if gotMax, ok := p.MaxEventTime(); ok {
			require.False(t, gotMax.Before(prevMax), "max event time went back")
			require.False(t, gotWM.Before(gotMax.Add(-lateness)), "wm >= max event time - lateness")
		}
		if known {
			require.True(t, p.IsLate(gotWM))
			require.False(t, p.IsLate(gotWM.Add(time.Nanosecond)))
		}
	}
	return advances
}

// Random programs never lower wm and always match the model.
func TestPropertyMonotone(t *testing.T) {
	programs := 1000
	if testing.Short() {
		programs = 100
	}
	rng := rand.New(rand.NewPCG(1, 2))
	advances := 0
	for range programs {
		prog := make([]byte, 3*(1+rng.IntN(200)))
		for i := range prog {
			prog[i] = byte(rng.Uint32())
		}
		advances += runProgram(t, prog)
	}
	require.Greater(t, advances, programs, "the programs must exercise idle advances")
	t.Logf("%d programs, %d idle advances", programs, advances)
}

// Event times alone, in any order, never lower wm.
func TestPropertyRandomEventTimes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		p := newPartition(t, newFakeClock(t0), 0, 0)
		var prev time.Time
		for i := range 100 {
			p.Observe(at(time.Duration(rng.Int64N(int64(24*time.Hour)))), t0)
			wm := wmOf(t, p)
			if i > 0 {
				require.False(t, wm.Before(prev))
			}
			prev = wm
		}
	}
}

func FuzzPartition(f *testing.F) {
	f.Add([]byte{0, 10, 0, 4, 8, 1, 3, 0x2c, 1, 5, 0, 0, 0, 1, 0})
	f.Add([]byte{7, 100, 0, 6, 0xff, 0, 6, 0x10, 0, 0, 0, 0, 0})
	f.Add([]byte{2, 0, 0, 4, 8, 1, 3, 0, 0x80, 5, 0, 0, 3, 0x2c, 1, 5, 0, 0})
	f.Fuzz(func(t *testing.T, prog []byte) {
		runProgram(t, prog)
	})
}
