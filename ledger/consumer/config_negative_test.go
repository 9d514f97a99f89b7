package consumer

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/configtest"
)

// Every signed numeric field of Config at -1: New refuses it, naming the field, or the
// field's documented meaning of a negative value holds.
func TestConfigNegativeValues(t *testing.T) {
	build := func(cfg Config[string]) error {
		_, err := New(cfg)
		return err
	}
	refused := func(field string) configtest.Case[Config[string]] {
		return configtest.Case[Config[string]]{Field: field, Refused: true}
	}
	accepted := func(field string, check func(t *testing.T, cfg Config[string])) configtest.Case[Config[string]] {
		return configtest.Case[Config[string]]{Field: field, Accepted: check}
	}
	configtest.Negative(t, validConfig(t), ErrConfig, build, []configtest.Case[Config[string]]{
		accepted("EffectBatch", func(t *testing.T, cfg Config[string]) {
			s, err := cfg.validate()
			require.NoError(t, err)
			assert.Equal(t, 1, s.effectBatch, "one effect per call")
		}),
		refused("WindowSize"),
		accepted("Lateness", negativeLatenessIsNone),
		accepted("IdleTimeout", negativeIdleTimeoutIsNever),
		accepted("FlushInterval", func(t *testing.T, cfg Config[string]) {
			s, err := cfg.validate()
			require.NoError(t, err)
			ticks, stop := s.ticker()
			defer stop()
			assert.Nil(t, ticks, "no periodic tick")
			assertNoCaughtUpTick(t, cfg)
		}),
		accepted("FlushWhenCaughtUp", assertNoCaughtUpTick),
		refused("WriteTimeout"),
		accepted("Workers", func(t *testing.T, cfg Config[string]) {
			h := newHarness(t, func(c *Config[string]) { c.Workers = cfg.Workers })
			assert.True(t, h.p.pool.inline, "the polling goroutine decides each message itself")
		}),
		refused("WriteConcurrency"),
		accepted("AssignmentWait", func(t *testing.T, cfg Config[string]) {
			h := newHarness(t, func(c *Config[string]) { c.AssignmentWait = cfg.AssignmentWait })
			later := time.Now().Add(24 * time.Hour)
			assert.Equal(t, HealthStarting, h.p.live.health(later, h.p.s.AssignmentWait, h.p.s.WriteTimeout).State,
				"never reported as holding no assignment")
		}),
		refused("AssignTimeout"),
		refused("ShutdownTimeout"),
		accepted("BufferLimit", func(t *testing.T, cfg Config[string]) {
			s, err := cfg.validate()
			require.NoError(t, err)
			assert.Zero(t, s.buffer, "no bound")
			for _, k := range []string{"queued.max.messages.kbytes", "queued.min.messages", "fetch.max.bytes"} {
				assert.NotContains(t, s.kafka, k, "librdkafka's prefetch defaults")
			}
		}),
	})
}

// negativeLatenessIsNone: the watermark is the maximum event time, so an event of the window
// that ends at it is late, and one at the watermark is admitted.
func negativeLatenessIsNone(t *testing.T, cfg Config[string]) {
	h := newHarness(t, func(c *Config[string]) { c.Lateness = cfg.Lateness })
	p0 := tp("t", 0)
	h.assign(p0, -1, "")
	h.feed(p0, 0, "w 5 A 1", "w 4:59 B 1", "w 5 C 1")
	assert.Equal(t, []Decision{Admitted, Late, Admitted}, h.outcomes(p0, 3))
}

// negativeIdleTimeoutIsNever: a caught-up partition quiet for a day does not go idle, and its
// watermark stays where its data put it.
func negativeIdleTimeoutIsNever(t *testing.T, cfg Config[string]) {
	h := newHarness(t, func(c *Config[string]) { c.IdleTimeout = cfg.IdleTimeout })
	p0 := tp("t", 0)
	h.assign(p0, -1, "")
	h.feed(p0, 0, "w 1 A 1")
	h.cl.high[p0] = 1 // caught up
	h.tick()
	h.clock.Advance(24 * time.Hour)
	h.tick()
	assert.False(t, h.p.parts[p0].wm.Idle())
	assert.Equal(t, at("-1"), h.p.parts[p0].written, "no idle advance")
}

// assertNoCaughtUpTick: a Poll that finds nothing after new messages runs no early tick, however
// long after the last one.
func assertNoCaughtUpTick(t *testing.T, cfg Config[string]) {
	h := newHarness(t, func(c *Config[string]) {
		c.FlushInterval, c.FlushWhenCaughtUp = cfg.FlushInterval, cfg.FlushWhenCaughtUp
	})
	p0 := tp("t", 0)
	h.assign(p0, -1, "")
	h.feed(p0, 0, "w 1 A 1")
	later := time.Now().Add(time.Hour)
	h.p.now = func() time.Time { return later }
	h.p.caughtUp(context.Background())
	assert.Zero(t, h.p.ticks, "no tick ran")
}
