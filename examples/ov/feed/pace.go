package feed

import (
	"context"
	"time"
)

// Pacer spaces records in wall-clock time according to their simulated timestamps: in real
// time (Speed 1), accelerated (Speed 60 plays a simulated minute per second), or as fast as
// possible (Speed 0). The first record anchors the two clocks.
type Pacer struct {
	// Speed is simulated seconds per wall-clock second; zero or negative means no waiting.
	Speed float64
	// Now and Sleep are the wall clock; nil means time.Now and a timer honouring ctx.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error

	anchored        bool
	simStart, start time.Time
}

// Anchor makes the simulated instant sim correspond to the wall-clock instant wall, instead of
// the first record and the time it is waited for.
func (p *Pacer) Anchor(sim, wall time.Time) {
	p.anchored, p.simStart, p.start = true, sim, wall
}

// Wait returns when the record stamped ts is due, or when ctx ends.
func (p *Pacer) Wait(ctx context.Context, ts time.Time) error {
	if p.Speed <= 0 {
		return ctx.Err()
	}
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	if !p.anchored {
		p.anchored, p.simStart, p.start = true, ts, now()
		return ctx.Err()
	}
	due := p.start.Add(time.Duration(float64(ts.Sub(p.simStart)) / p.Speed))
	d := due.Sub(now())
	if d <= 0 {
		return ctx.Err()
	}
	if p.Sleep != nil {
		return p.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// SimTime returns the simulated time that corresponds to the wall-clock instant now, once
// anchored, for progress displays.
func (p *Pacer) SimTime(now time.Time) (time.Time, bool) {
	if !p.anchored || p.Speed <= 0 {
		return time.Time{}, false
	}
	return p.simStart.Add(time.Duration(float64(now.Sub(p.start)) * p.Speed)), true
}
