package watermark_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/configtest"
	"github.com/streamledger/streamledger/watermark"
)

func TestConfigDefaults(t *testing.T) {
	p := watermark.NewPartition(watermark.Config{})
	cfg := p.Config()
	assert.Equal(t, 120*time.Second, cfg.Lateness)
	assert.Equal(t, defaultLateness, cfg.Lateness)
	assert.Equal(t, defaultIdleTimeout, cfg.IdleTimeout)
	require.NotNil(t, cfg.Clock, "nil Clock must become the system clock")

	s := watermark.NewSet[string](watermark.Config{})
	assert.Equal(t, defaultLateness, s.Config().Lateness)
	assert.Equal(t, defaultIdleTimeout, s.Config().IdleTimeout)
	require.NotNil(t, s.Config().Clock)
}

func TestConfigKeepsExplicitValues(t *testing.T) {
	clock := newFakeClock(t0)
	p := watermark.NewPartition(watermark.Config{Lateness: time.Second, IdleTimeout: time.Minute, Clock: clock.Now})
	assert.Equal(t, time.Second, p.Config().Lateness)
	assert.Equal(t, time.Minute, p.Config().IdleTimeout)
	clock.Advance(time.Hour)
	assert.Equal(t, at(time.Hour), p.Config().Clock(), "the configured clock reads back")

	p.Observe(at(10*time.Second), t0)
	assert.Equal(t, at(9*time.Second), wmOf(t, p), "lateness of 1 s applies")
}

// Every signed numeric field of Config at -1 means off, as documented: no lateness (the
// watermark is the maximum event time), and a partition that never goes idle however long it
// is quiet. Config has no value to refuse, so NewPartition and NewSet return no error.
func TestConfigNegativeValues(t *testing.T) {
	build := func(cfg watermark.Config) error {
		watermark.NewSet[int](cfg)
		return nil
	}
	configtest.Negative(t, watermark.Config{Clock: newFakeClock(t0).Now}, nil, build, []configtest.Case[watermark.Config]{
		{Field: "Lateness", Accepted: func(t *testing.T, cfg watermark.Config) {
			p := watermark.NewPartition(cfg)
			assert.Equal(t, time.Duration(-1), p.Config().Lateness, "reads back as none, not as the default")
			p.Observe(at(10*time.Second), t0)
			assert.Equal(t, at(10*time.Second), wmOf(t, p), "no lateness")
		}},
		{Field: "IdleTimeout", Accepted: func(t *testing.T, cfg watermark.Config) {
			clock := newFakeClock(t0)
			cfg.Clock = clock.Now
			p := watermark.NewPartition(cfg)
			p.Observe(at(10*time.Second), clock.Now())
			p.SetCaughtUp(true)
			clock.Advance(24 * time.Hour)
			assert.False(t, p.Tick())
			assert.False(t, p.Idle(), "never idle")
			assert.Equal(t, at(10*time.Second-defaultLateness), wmOf(t, p), "no idle advance")
		}},
	})
}

// A zero Partition or Set behaves as one made from the zero Config, and
// never panics. Under synctest, the system clock is deterministic.
func TestZeroValues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var p watermark.Partition
		assert.Equal(t, defaultLateness, p.Config().Lateness)
		assert.Equal(t, defaultIdleTimeout, p.Config().IdleTimeout)
		require.NotNil(t, p.Config().Clock)

		p.SetCaughtUp(true)
		assert.False(t, p.Tick(), "the first tick starts the quiet time")
		time.Sleep(defaultIdleTimeout - time.Nanosecond)
		p.Tick()
		assert.False(t, p.Idle())
		time.Sleep(time.Nanosecond)
		p.Tick()
		assert.True(t, p.Idle(), "no data, caught up, quiet for the default timeout")

		p.Observe(at(7*time.Minute), time.Now())
		assert.Equal(t, at(5*time.Minute), wmOf(t, &p), "default lateness")
		p.SetCaughtUp(true)
		time.Sleep(time.Minute)
		require.True(t, p.Tick())
		assert.Equal(t, at(6*time.Minute), wmOf(t, &p))

		var r watermark.Partition
		require.NoError(t, r.Restore(watermark.RestorePoint{ClosedThrough: at(5 * time.Minute)}))
		r.SetCaughtUp(true)
		time.Sleep(defaultIdleTimeout)
		require.True(t, r.Tick(), "quiet time counts from the restore")
		assert.Equal(t, at(5*time.Minute+defaultIdleTimeout), wmOf(t, &r))

		var s watermark.Set[string]
		assert.Equal(t, defaultLateness, s.Config().Lateness)
		_, ok := s.Min()
		assert.False(t, ok)
		assert.Nil(t, s.Tick())
		assert.False(t, s.Revoke("x"))
		q, err := s.Assign("x", watermark.RestorePoint{Metadata: at(time.Minute)})
		require.NoError(t, err)
		got, ok := s.Min()
		require.True(t, ok)
		assert.Equal(t, at(time.Minute), got)
		q.SetCaughtUp(true)
		time.Sleep(defaultIdleTimeout)
		assert.Equal(t, []string{"x"}, s.Tick())
	})
}
