package watermark

import (
	"errors"
	"time"
)

// The defaults of the zero Config: 120 s of lateness, so that a 5-minute window is written
// about 7 minutes after it opens, and 30 s of idle timeout.
const (
	defaultLateness    = 120 * time.Second
	defaultIdleTimeout = 30 * time.Second
)

// Errors returned for misuse. They are wrapped with details; test with [errors.Is].
var (
	// ErrNotFresh reports a [Partition.Restore] of a partition that has already
	// observed a message or has already been restored.
	ErrNotFresh = errors.New("watermark: restore of a partition that is not fresh")
	// ErrInvalidPosition reports a consume position or high watermark that cannot
	// be right: negative, or a position above the high watermark.
	ErrInvalidPosition = errors.New("watermark: invalid position")
	// ErrAssigned reports a [Set.Assign] of a key that is already assigned.
	ErrAssigned = errors.New("watermark: partition already assigned")
)

// Config configures a [Partition] or a [Set]. In every field, zero means the
// default the field states, and a negative value means what the field says;
// the zero value is ready to use. A zero Partition or Set uses the zero Config.
type Config struct {
	// Lateness is the allowed lateness: wm(P) trails the maximum event time
	// seen in P by this much. Zero means 120 s; negative means none: the
	// watermark is the maximum event time.
	Lateness time.Duration

	// IdleTimeout is how long a caught-up partition must go without a message
	// before it is idle. A partition whose caller never reports it caught up
	// (see [Partition.SetPosition]) never becomes idle, whatever the timeout.
	// Zero means 30 s; negative means never.
	IdleTimeout time.Duration

	// Clock measures idleness. It is read only by [Partition.Tick], [Set.Tick],
	// [Partition.Restore] and when a partition is created, never per event.
	// Arrival times passed to [Partition.Observe] must come from the same clock.
	// Nil means time.Now.
	Clock func() time.Time
}

// resolve fills in defaults; a negative Lateness or IdleTimeout is kept (none, never).
func (c Config) resolve() Config {
	if c.Lateness == 0 {
		c.Lateness = defaultLateness
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = defaultIdleTimeout
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	return c
}

// The accessors below apply the defaults, so that a zero Partition or Set
// behaves as one made from the zero Config.

func (c *Config) lateness() time.Duration {
	switch {
	case c.Lateness == 0:
		return defaultLateness
	case c.Lateness < 0:
		return 0
	}
	return c.Lateness
}

// idleTimeout is negative when partitions never go idle.
func (c *Config) idleTimeout() time.Duration {
	if c.IdleTimeout == 0 {
		return defaultIdleTimeout
	}
	return c.IdleTimeout
}

func (c *Config) now() time.Time {
	if c.Clock == nil {
		return time.Now()
	}
	return c.Clock()
}

// resolved returns c with the defaults filled in, for reading back.
func (c *Config) resolved() Config {
	r := Config{Lateness: c.lateness(), IdleTimeout: c.idleTimeout(), Clock: c.Clock}
	if c.Lateness < 0 {
		r.Lateness = c.Lateness // none, not the default a zero would read back as
	}
	if r.Clock == nil {
		r.Clock = time.Now
	}
	return r
}
