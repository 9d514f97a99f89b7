package sink

import "time"

// RetryPolicy bounds the retries of an operation that failed transiently: a write of a sink
// or an effect sink, the delivery of a dead letter. The wait before each retry doubles from
// InitialBackoff up to MaxBackoff, without jitter, so that runs are reproducible.
type RetryPolicy struct {
	// MaxAttempts is how many attempts are made in all, the first included. Zero means 5 (the
	// default); negative means one attempt, without retry.
	MaxAttempts int
	// InitialBackoff is the wait before the second attempt. Zero means 50 ms (the default);
	// negative means no wait between attempts.
	InitialBackoff time.Duration
	// MaxBackoff is the longest wait between two attempts. Zero means 2 s (the default);
	// negative means no bound.
	MaxBackoff time.Duration
}
