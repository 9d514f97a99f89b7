package watermark_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/watermark"
)

type tp struct {
	topic     string
	partition int32
}

func newSet(t *testing.T, clock *fakeClock) *watermark.Set[tp] {
	t.Helper()
	s := watermark.NewSet[tp](watermark.Config{IdleTimeout: idleTimeout, Clock: clock.Now})
	return s
}

func TestSetAssignRevoke(t *testing.T) {
	s := newSet(t, newFakeClock(t0))
	a, b, c := tp{"arrivals", 0}, tp{"arrivals", 1}, tp{"arrivals", 2}

	pc, err := s.Assign(c, watermark.RestorePoint{})
	require.NoError(t, err)
	_, err = s.Assign(a, watermark.RestorePoint{ClosedThrough: at(5 * time.Minute)})
	require.NoError(t, err)
	_, err = s.Assign(b, watermark.RestorePoint{Metadata: at(10 * time.Minute)})
	require.NoError(t, err)

	_, err = s.Assign(a, watermark.RestorePoint{})
	require.ErrorIs(t, err, watermark.ErrAssigned)
	assert.ErrorContains(t, err, "{arrivals 0}")

	assert.Equal(t, 3, s.Len())
	got, ok := s.Partition(c)
	require.True(t, ok)
	assert.Same(t, pc, got)
	pa, _ := s.Partition(a)
	assert.Equal(t, at(5*time.Minute), wmOf(t, pa), "Assign restores")
	_, ok = pc.Watermark()
	assert.False(t, ok, "a zero RestorePoint is a fresh partition")

	var order []tp
	for k, p := range s.All() {
		require.NotNil(t, p)
		order = append(order, k)
	}
	assert.Equal(t, []tp{c, a, b}, order, "assignment order")

	assert.True(t, s.Revoke(a))
	assert.False(t, s.Revoke(a))
	_, ok = s.Partition(a)
	assert.False(t, ok)
	assert.Equal(t, 2, s.Len())
	order = order[:0]
	for k := range s.All() {
		order = append(order, k)
		break // early stop must be honoured
	}
	assert.Equal(t, []tp{c}, order)

	// A revoked partition can be assigned again, fresh.
	pa2, err := s.Assign(a, watermark.RestorePoint{})
	require.NoError(t, err)
	assert.NotSame(t, pa, pa2)
	_, ok = pa2.Watermark()
	assert.False(t, ok)
}

func TestSetTick(t *testing.T) {
	clock := newFakeClock(t0)
	s := newSet(t, clock)
	keys := []tp{{"a", 0}, {"a", 1}, {"a", 2}, {"a", 3}}
	for _, k := range keys {
		_, err := s.Assign(k, watermark.RestorePoint{})
		require.NoError(t, err)
	}
	part := func(k tp) *watermark.Partition { p, _ := s.Partition(k); return p }
	for i, k := range keys {
		part(k).Observe(at(time.Duration(i)*time.Minute), clock.Now())
	}
	part(keys[3]).SetCaughtUp(true)
	part(keys[1]).SetCaughtUp(true)
	part(keys[2]).SetCaughtUp(false)

	clock.reads = 0
	clock.Advance(idleTimeout)
	assert.Equal(t, []tp{keys[1], keys[3]}, s.Tick(), "advanced keys, in assignment order")
	assert.Equal(t, 1, clock.reads, "one clock read per Tick, whatever the number of partitions")
	assert.Equal(t, at(time.Minute+idleTimeout-defaultLateness), wmOf(t, part(keys[1])))

	part(keys[1]).Observe(at(time.Hour), clock.Now()) // rejoins
	clock.Advance(time.Second)
	assert.Equal(t, []tp{keys[3]}, s.Tick())
	part(keys[3]).SetCaughtUp(false)
	assert.Nil(t, s.Tick())
}

// Each partition is restored to wm, then made idle (caught up, quiet for the
// timeout) or left active. Idle partitions advance by the timeout on the way
// (restored: wm + (now - restore)).
func TestSetMin(t *testing.T) {
	type spec struct {
		wm   time.Duration // restored wm as offset from t0; -1 for none (fresh)
		idle bool
	}
	const none = -1
	tests := []struct {
		name   string
		parts  []spec
		want   time.Duration // offset from t0
		wantOK bool
	}{
		{"empty set", nil, 0, false},
		{"one active without data", []spec{{none, false}}, 0, false},
		{"min over active", []spec{{10 * time.Minute, false}, {5 * time.Minute, false}, {7 * time.Minute, false}}, 5 * time.Minute, true},
		{"idle partition excluded", []spec{{10 * time.Minute, false}, {time.Minute, true}, {7 * time.Minute, false}}, 7 * time.Minute, true},
		{"active without data holds min unknown", []spec{{10 * time.Minute, false}, {none, false}}, 0, false},
		{"idle without data excluded", []spec{{10 * time.Minute, false}, {none, true}}, 10 * time.Minute, true},
		{"active without data, idle with data", []spec{{none, false}, {10 * time.Minute, true}}, 0, false},
		{"all idle: min over idle watermarks", []spec{{10 * time.Minute, true}, {5 * time.Minute, true}, {none, true}},
			5*time.Minute + idleTimeout, true},
		{"all idle, none with data", []spec{{none, true}, {none, true}}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock(t0)
			s := newSet(t, clock)
			for i, sp := range tt.parts {
				var from watermark.RestorePoint
				if sp.wm != none {
					from.Metadata = at(sp.wm)
				}
				p, err := s.Assign(tp{"t", int32(i)}, from)
				require.NoError(t, err)
				p.SetCaughtUp(sp.idle)
			}
			clock.Advance(idleTimeout)
			s.Tick()
			for _, p := range s.All() {
				require.Equal(t, p.CaughtUp(), p.Idle(), "caught up means idle after the timeout")
			}

			got, ok := s.Min()
			require.Equal(t, tt.wantOK, ok)
			if ok {
				assert.Equal(t, at(tt.want), got)
			}
		})
	}
}

func TestSetMinFollowsIdlenessAndRejoin(t *testing.T) {
	clock := newFakeClock(t0)
	s := newSet(t, clock)
	busy, err := s.Assign(tp{"t", 0}, watermark.RestorePoint{})
	require.NoError(t, err)
	quiet, err := s.Assign(tp{"t", 1}, watermark.RestorePoint{})
	require.NoError(t, err)

	busy.Observe(at(20*time.Minute), clock.Now())
	quiet.Observe(at(7*time.Minute), clock.Now())
	quiet.SetCaughtUp(true)
	got, ok := s.Min()
	require.True(t, ok)
	assert.Equal(t, at(5*time.Minute), got, "the quiet partition holds the min while active")

	clock.Advance(idleTimeout)
	busy.Observe(at(21*time.Minute), clock.Now())
	s.Tick()
	require.True(t, quiet.Idle())
	got, _ = s.Min()
	assert.Equal(t, at(19*time.Minute), got, "idle: it leaves the min")

	quiet.Observe(at(8*time.Minute), clock.Now()) // rejoins, behind
	got, _ = s.Min()
	assert.Equal(t, at(6*time.Minute), got, "Min goes back when a partition rejoins")
}
