package watermark_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/watermark"
)

func TestRestore(t *testing.T) {
	tests := []struct {
		name          string
		metadata      time.Time // zero: missing or garbled
		closedThrough time.Time // zero: no progress in the sink
		want          time.Time // zero: watermark unknown (fresh)
	}{
		{"metadata ahead of closed_through", at(8 * time.Minute), at(5 * time.Minute), at(8 * time.Minute)},
		{"closed_through ahead of metadata", at(3 * time.Minute), at(5 * time.Minute), at(5 * time.Minute)},
		{"equal", at(5 * time.Minute), at(5 * time.Minute), at(5 * time.Minute)},
		{"garbled metadata falls back to closed_through", time.Time{}, at(5 * time.Minute), at(5 * time.Minute)},
		{"metadata without progress", at(4 * time.Minute), time.Time{}, at(4 * time.Minute)},
		{"nothing at all is a fresh partition", time.Time{}, time.Time{}, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPartition(t, newFakeClock(t0), 0, 0)
			require.NoError(t, p.Restore(watermark.RestorePoint{Metadata: tt.metadata, ClosedThrough: tt.closedThrough}))

			wm, ok := p.Watermark()
			if tt.want.IsZero() {
				assert.False(t, ok)
				_, ok = p.MaxEventTime()
				assert.False(t, ok)
				assert.False(t, p.IsLate(at(-time.Hour)))
				p.Observe(at(7*time.Minute), t0)
				assert.Equal(t, at(5*time.Minute), wmOf(t, p), "a fresh partition starts from its first event")
				return
			}
			require.True(t, ok)
			assert.Equal(t, tt.want, wm)

			maxET, ok := p.MaxEventTime()
			require.True(t, ok)
			assert.Equal(t, tt.want.Add(defaultLateness), maxET, "max event time after restore is wm + lateness")

			assert.True(t, p.IsLate(tt.want), "a window ending at the restored wm is written: late")
			assert.False(t, p.IsLate(tt.want.Add(1)))

			// An event below wm + lateness does not move wm; one above it does.
			p.Observe(maxET.Add(-time.Second), t0)
			assert.Equal(t, tt.want, wmOf(t, p))
			p.Observe(maxET.Add(time.Minute), t0)
			assert.Equal(t, tt.want.Add(time.Minute), wmOf(t, p))
		})
	}
}

func TestRestoreNormalizesToUTC(t *testing.T) {
	p := newPartition(t, newFakeClock(t0), 0, 0)
	zone := time.FixedZone("CEST", 2*60*60)
	require.NoError(t, p.Restore(watermark.RestorePoint{Metadata: at(5 * time.Minute).In(zone)}))
	wm := wmOf(t, p)
	assert.Equal(t, time.UTC, wm.Location())
	assert.Equal(t, at(5*time.Minute), wm)
}

func TestRestoreMisuse(t *testing.T) {
	point := watermark.RestorePoint{Metadata: at(time.Hour)}
	tests := []struct {
		name    string
		prepare func(p *watermark.Partition)
		msg     string
	}{
		{"after an event", func(p *watermark.Partition) { p.Observe(at(7*time.Minute), t0) },
			"want no message observed before the restore, found one"},
		{"after a message without event time", func(p *watermark.Partition) { p.Touch(t0) },
			"want no message observed before the restore, found one"},
		{"twice", func(p *watermark.Partition) {
			require.NoError(t, p.Restore(watermark.RestorePoint{ClosedThrough: at(7 * time.Minute)}))
		}, "want a single restore, found a second"},
		{"twice, the first from nothing", func(p *watermark.Partition) {
			require.NoError(t, p.Restore(watermark.RestorePoint{}))
		}, "want a single restore, found a second"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPartition(t, newFakeClock(t0), 0, 0)
			tt.prepare(p)
			wantWM, wantOK := p.Watermark()
			wantMax, _ := p.MaxEventTime()

			err := p.Restore(point)
			require.ErrorIs(t, err, watermark.ErrNotFresh)
			assert.ErrorContains(t, err, tt.msg)

			wm, ok := p.Watermark()
			assert.Equal(t, wantOK, ok, "state unchanged")
			assert.Equal(t, wantWM, wm, "state unchanged")
			maxET, _ := p.MaxEventTime()
			assert.Equal(t, wantMax, maxET, "state unchanged")
		})
	}
}

// A replay from any committed offset C, restored from the watermark as of C,
// decides every later event as the first run did.
func TestRestoreReplayRepeatsDecisions(t *testing.T) {
	// Event times in minutes, in consumption order (offsets 0..n-1), out of order on purpose.
	seq := []time.Duration{1, 3, 2, 7, 4, 5, 12, 6, 9, 11, 10, 17, 14, 13, 22, 16, 21, 19, 26, 20}
	const size = 5 * time.Minute
	end := func(e time.Time) time.Time { return e.Truncate(size).Add(size) }

	first := newPartition(t, newFakeClock(t0), 0, 0)
	var decisions []bool
	var wmAsOf []time.Time // wmAsOf[c]: wm after every message below offset c
	for _, m := range seq {
		wm, _ := first.Watermark()
		wmAsOf = append(wmAsOf, wm)
		e := at(m * time.Minute)
		decisions = append(decisions, first.IsLate(end(e)))
		first.Observe(e, t0)
	}
	require.Contains(t, decisions, true, "the sequence must contain late events to test anything")

	for c := range seq {
		for _, withProgress := range []bool{false, true} {
			t.Run(fmt.Sprintf("C=%d/closed_through=%t", c, withProgress), func(t *testing.T) {
				point := watermark.RestorePoint{Metadata: wmAsOf[c]}
				if withProgress && !wmAsOf[c].IsZero() {
					// The sink has written every window ending at or before the
					// last window boundary below wm.
					point.ClosedThrough = wmAsOf[c].Truncate(size)
				}
				replay := newPartition(t, newFakeClock(t0), 0, 0)
				require.NoError(t, replay.Restore(point))
				for i := c; i < len(seq); i++ {
					e := at(seq[i] * time.Minute)
					require.Equal(t, decisions[i], replay.IsLate(end(e)), "offset %d", i)
					replay.Observe(e, t0)
				}
				assert.Equal(t, wmOf(t, first), wmOf(t, replay))
			})
		}
	}
}
