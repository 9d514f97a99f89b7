package chaos

import (
	"context"
	"slices"
	"sync/atomic"
	"time"
)

// crew is a scenario's processors by name, each with its options, started again when one
// dies on its own.
type crew struct {
	s     *scene
	opts  map[string]procOpts
	procs map[string]*proc
}

// startCrew starts a processor per entry of opts, in name order.
func (s *scene) startCrew(ctx context.Context, opts map[string]procOpts) (*crew, error) {
	c := &crew{s: s, opts: opts, procs: map[string]*proc{}}
	names := make([]string, 0, len(opts))
	for n := range opts {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := c.restart(ctx, n); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// restart starts the processor name (again) with its options.
func (c *crew) restart(ctx context.Context, name string) error {
	p, err := c.s.startProc(ctx, name, c.opts[name])
	if err == nil {
		c.procs[name] = p
	}
	return err
}

// restartDied starts again every processor that exited without being asked to, noting it.
func (c *crew) restartDied(ctx context.Context) error {
	for name, p := range c.procs {
		var err error
		if c.procs[name], err = c.s.restartIfDied(ctx, p, c.opts[name]); err != nil {
			return err
		}
	}
	return nil
}

// feeding is the scenario's feed being produced in the background.
type feeding struct {
	sent     atomic.Int64
	produced <-chan error
	done     bool
	err      error
}

// startFeed produces the scenario's feed over the size's span.
func (s *scene) startFeed(ctx context.Context) *feeding {
	f := &feeding{}
	f.produced = s.produce(ctx, func(i int) { f.sent.Store(int64(i + 1)) })
	return f
}

// until waits until n records were handed to the producer, or all of them were produced.
func (f *feeding) until(ctx context.Context, n int64) error {
	for !f.done && f.sent.Load() < n {
		select {
		case f.err = <-f.produced:
			f.done = true
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// finished reports, without waiting, whether the whole feed was produced.
func (f *feeding) finished() bool {
	if !f.done {
		select {
		case f.err = <-f.produced:
			f.done = true
		default:
		}
	}
	return f.done
}

// wait waits until the whole feed was produced and returns the producer's error.
func (f *feeding) wait() error {
	if !f.done {
		f.err, f.done = <-f.produced, true
	}
	return f.err
}
