package sink

import (
	"context"
	"errors"
	"math"
	"time"
)

// RetryPolicy bounds the retries of a write that failed transiently. Zero fields take the
// default in brackets; a negative MaxAttempts means one attempt (no retries), a negative
// InitialBackoff no wait, and a negative MaxBackoff no longest wait. Backoff doubles from
// InitialBackoff up to MaxBackoff, without jitter, so that runs are reproducible.
type RetryPolicy struct {
	MaxAttempts    int           // attempts in all, the first included [5]
	InitialBackoff time.Duration // wait before the second attempt [50ms]
	MaxBackoff     time.Duration // longest wait [2s]
}

// WithDefaults returns p with its zero fields set.
func (p RetryPolicy) WithDefaults() RetryPolicy {
	switch {
	case p.MaxAttempts == 0:
		p.MaxAttempts = 5
	case p.MaxAttempts < 0:
		p.MaxAttempts = 1
	}
	switch {
	case p.InitialBackoff == 0:
		p.InitialBackoff = 50 * time.Millisecond
	case p.InitialBackoff < 0:
		p.InitialBackoff = 0
	}
	switch {
	case p.MaxBackoff == 0:
		p.MaxBackoff = 2 * time.Second
	case p.MaxBackoff < 0:
		p.MaxBackoff = math.MaxInt64
	}
	p.MaxBackoff = max(p.MaxBackoff, p.InitialBackoff)
	return p
}

// Backoff returns the wait after failed attempt n (1-based).
func (p RetryPolicy) Backoff(n int) time.Duration {
	p = p.WithDefaults()
	d := p.InitialBackoff
	for i := 1; i < n && d > 0 && d < p.MaxBackoff; i++ {
		d = min(d, p.MaxBackoff/2) * 2 // never past MaxBackoff, never overflowing
	}
	return min(d, p.MaxBackoff)
}

// Do runs attempt until it succeeds, fails with an error that transient rejects, the
// attempts run out or ctx ends. attempt receives the 1-based attempt number. Every failure
// is returned as a [*WriteError] naming op; success is returned only when attempt returned
// nil.
func (p RetryPolicy) Do(ctx context.Context, op string, transient func(error) bool, attempt func(ctx context.Context, n int) error) error {
	p = p.WithDefaults()
	var last error
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return &WriteError{Op: op, Attempts: n - 1, Transient: true, Err: errors.Join(err, last)}
		}
		last = attempt(ctx, n)
		if last == nil {
			return nil
		}
		if ctx.Err() != nil {
			return &WriteError{Op: op, Attempts: n, Transient: true, Err: errors.Join(ctx.Err(), last)}
		}
		if !transient(last) {
			return &WriteError{Op: op, Attempts: n, Err: last}
		}
		if n >= p.MaxAttempts {
			return &WriteError{Op: op, Attempts: n, Transient: true, Err: last}
		}
		t := time.NewTimer(p.Backoff(n))
		select {
		case <-ctx.Done():
			t.Stop()
			return &WriteError{Op: op, Attempts: n, Transient: true, Err: errors.Join(ctx.Err(), last)}
		case <-t.C:
		}
	}
}
