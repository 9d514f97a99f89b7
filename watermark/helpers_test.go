package watermark_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/watermark"
)

// The defaults of the zero Config, as its documentation states them.
const (
	defaultLateness    = 120 * time.Second
	defaultIdleTimeout = 30 * time.Second
)

// t0 is 12:00 UTC; windows of 5 minutes are aligned to it.
var t0 = time.Date(2024, 5, 13, 12, 0, 0, 0, time.UTC)

// at returns t0 + d.
func at(d time.Duration) time.Time { return t0.Add(d) }

// fakeClock is a manual clock that counts how often it is read.
type fakeClock struct {
	now   time.Time
	reads int
}

func newFakeClock(now time.Time) *fakeClock { return &fakeClock{now: now} }

func (c *fakeClock) Now() time.Time {
	c.reads++
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) { c.now = c.now.Add(d) }

// newPartition returns a fresh partition with the given lateness and idle
// timeout (zero for defaults) on clock.
func newPartition(t testing.TB, clock *fakeClock, lateness, idle time.Duration) *watermark.Partition {
	t.Helper()
	p := watermark.NewPartition(watermark.Config{Lateness: lateness, IdleTimeout: idle, Clock: clock.Now})
	return p
}

// wmOf returns the partition's watermark, failing if it is unknown.
func wmOf(t testing.TB, p *watermark.Partition) time.Time {
	t.Helper()
	wm, ok := p.Watermark()
	require.True(t, ok, "watermark should be known")
	return wm
}
