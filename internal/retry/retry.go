// Package retry runs the retries a sink.RetryPolicy bounds, for every package that retries
// (the sinks, the effect sinks, the dead-letter producer): the policy's defaults and the
// meanings of its negative fields ([Resolve]), the doubling backoff ([Backoff]) and a loop
// that retries transient failures of a write ([Do]).
package retry

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/streamledger/streamledger/sink"
)

// The defaults of a zero sink.RetryPolicy's fields.
const (
	DefaultMaxAttempts    = 5
	DefaultInitialBackoff = 50 * time.Millisecond
	DefaultMaxBackoff     = 2 * time.Second
)

// Resolve returns p with its zero fields set to their defaults and its negative ones to what
// they mean: a negative MaxAttempts one attempt, a negative InitialBackoff no wait (kept
// negative, so that resolving a resolved policy again changes nothing), a negative MaxBackoff
// no longest wait. MaxBackoff is at least InitialBackoff.
func Resolve(p sink.RetryPolicy) sink.RetryPolicy {
	switch {
	case p.MaxAttempts == 0:
		p.MaxAttempts = DefaultMaxAttempts
	case p.MaxAttempts < 0:
		p.MaxAttempts = 1
	}
	switch {
	case p.InitialBackoff == 0:
		p.InitialBackoff = DefaultInitialBackoff
	case p.InitialBackoff < 0:
		p.InitialBackoff = -1
	}
	switch {
	case p.MaxBackoff == 0:
		p.MaxBackoff = DefaultMaxBackoff
	case p.MaxBackoff < 0:
		p.MaxBackoff = math.MaxInt64
	}
	p.MaxBackoff = max(p.MaxBackoff, p.InitialBackoff)
	return p
}

// Backoff returns the wait after failed attempt n (1-based): InitialBackoff doubled n-1
// times, at most MaxBackoff, without jitter, so that runs are reproducible.
func Backoff(p sink.RetryPolicy, n int) time.Duration {
	p = Resolve(p)
	d := max(p.InitialBackoff, 0)
	for i := 1; i < n && d > 0 && d < p.MaxBackoff; i++ {
		d = min(d, p.MaxBackoff/2) * 2 // never past MaxBackoff, never overflowing
	}
	return min(d, p.MaxBackoff)
}

// Do runs attempt until it succeeds, fails with an error that transient rejects, the
// attempts run out or ctx ends. attempt receives the 1-based attempt number. Every failure
// is returned as a [*sink.WriteError] naming op; success is returned only when attempt
// returned nil.
func Do(ctx context.Context, p sink.RetryPolicy, op string, transient func(error) bool, attempt func(ctx context.Context, n int) error) error {
	p = Resolve(p)
	var last error
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return &sink.WriteError{Op: op, Attempts: n - 1, Transient: true, Err: errors.Join(err, last)}
		}
		last = attempt(ctx, n)
		if last == nil {
			return nil
		}
		if ctx.Err() != nil {
			return &sink.WriteError{Op: op, Attempts: n, Transient: true, Err: errors.Join(ctx.Err(), last)}
		}
		if !transient(last) {
			return &sink.WriteError{Op: op, Attempts: n, Err: last}
		}
		if n >= p.MaxAttempts {
			return &sink.WriteError{Op: op, Attempts: n, Transient: true, Err: last}
		}
		t := time.NewTimer(Backoff(p, n))
		select {
		case <-ctx.Done():
			t.Stop()
			return &sink.WriteError{Op: op, Attempts: n, Transient: true, Err: errors.Join(ctx.Err(), last)}
		case <-t.C:
		}
	}
}
