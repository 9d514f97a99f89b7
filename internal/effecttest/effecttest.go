// Package effecttest is the conformance suite of the effect sinks (sink/postgres and
// sink/mysql Effects): the same cases, run against each database through a small [Adapter]
// that creates the accounts of a bank, applies credits through the sink with a balance-credit
// effect, and reads balances, effects and markers back. Every operation is compared with its
// marker, not only the final balances.
package effecttest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/streamledger/streamledger/sink"
)

// Credit is one balance credit: the effect of the exactly-once lesson.
type Credit struct {
	OpID    string
	Account string
	Amount  int64
}

// Op returns the credit's operation; its payload is "account:amount".
func (c Credit) Op() sink.Operation {
	return sink.Operation{ID: c.OpID, Payload: fmt.Appendf(nil, "%s:%d", c.Account, c.Amount)}
}

// Operations returns the operations of batch.
func Operations(batch []Credit) []sink.Operation {
	ops := make([]sink.Operation, len(batch))
	for i, c := range batch {
		ops[i] = c.Op()
	}
	return ops
}

// Hash returns the payload hash the credit's marker stores.
func (c Credit) Hash() []byte {
	h := c.Op().Hash()
	return h[:]
}

// Config is what a case sets on an effect sink; zero fields leave the sink's defaults, except
// Retry, which the adapter may make faster when it is zero.
type Config struct {
	Horizon, SourceRetention time.Duration
	Retry                    sink.RetryPolicy
	Clock                    func() time.Time
}

// Verdict is an effect that writes nothing and returns its answer: a refusal, a failure, or a
// result an effect must not return.
type Verdict func(ops []int) ([]sink.Result, error)

// Sink is an effect sink under test.
type Sink interface {
	// Apply applies batch in one call with the credit effect: per operation, in batch order,
	// add the amount to the account's balance and log the operation ID on the account (in
	// batch order); refuse with [sink.ErrNoEffect] a credit whose account does not exist.
	// Concurrent batches lock their accounts in one order. A balance below zero violates
	// the accounts' CHECK constraint.
	Apply(ctx context.Context, batch []Credit) ([]sink.Result, error)
	// ApplyVerdict applies ops with an effect that only returns v's answer; a nil v passes a
	// nil effect.
	ApplyVerdict(ctx context.Context, ops []sink.Operation, v Verdict) ([]sink.Result, error)
	// Prune prunes the sink's markers.
	Prune(ctx context.Context) (int64, error)
}

// DB is a private database holding the accounts and the markers.
type DB interface {
	// Effects returns a migrated effect sink with cfg on the database; with ownPool it uses
	// a connection pool of its own, so that two sinks race as two processes would.
	Effects(t *testing.T, cfg Config, ownPool bool) Sink
	// Check returns the error of the sink's constructor for cfg, without a database.
	Check(cfg Config) error
	// Balance returns an account's balance.
	Balance(t *testing.T, account string) int64
	// Applied returns how many times each operation's effect is in the accounts.
	Applied(t *testing.T) map[string]int
	// Ops returns the operation IDs logged on account, in the order they were applied.
	Ops(t *testing.T, account string) []string
	// Markers returns the stored marker hashes by operation ID.
	Markers(t *testing.T) map[string][]byte
	// Terminate makes the server end the session conn (a connection id of
	// [faults.Attempt]), as a crash of the server side would.
	Terminate(ctx context.Context, t *testing.T, conn int64)
	// LockWaiters returns how many statements on the database's tables wait for a lock.
	LockWaiters(ctx context.Context, t *testing.T) int
}

// Adapter runs the suite on one database.
type Adapter struct {
	// New returns a private database with the accounts given (id: balance).
	New func(t *testing.T, accounts map[string]int64) DB
	// Transient is a failure that the sink retries (a serialization failure, a deadlock).
	Transient error
	// ConnLost is the error a client sees when the server ended its session.
	ConnLost error
	// CheckViolation reports whether err is the violation of the accounts' CHECK constraint.
	CheckViolation func(err error) bool
}

// Run runs every case of the suite.
func Run(t *testing.T, a Adapter) {
	for _, c := range []struct {
		name string
		run  func(*testing.T, Adapter)
	}{
		{"Outcomes", outcomes},
		{"BatchOutcomes", batchOutcomes},
		{"InvalidOperationsLeaveNoMarker", invalidOperations},
		{"CrashPoints", crashPoints},
		{"CommitAcknowledgementLost", commitAcknowledgementLost},
		{"RetryAppliesTheBatchWhole", retryWhole},
		{"RaceOnOneID", raceOnOneID},
		{"PerOperation", perOperation},
		{"RetentionHorizon", retentionHorizon},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, a) })
	}
}

// Ctx returns a context for a test, ended with it.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// applyOne applies c alone and returns its outcome, or its conflict or refusal as an error.
func applyOne(ctx context.Context, s Sink, c Credit) (sink.Outcome, error) {
	res, err := s.Apply(ctx, []Credit{c})
	if err != nil {
		return 0, err
	}
	return res[0].Outcome, res[0].Err
}
