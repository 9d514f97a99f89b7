package fold

import (
	"context"
	"errors"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/report"
)

// WriteCloseCall is the frame of an implementation's [sink.WindowWriter.WriteClose]: it
// calls write, which plans and writes the call (with its retries) and returns the plan of
// the attempt that committed and the attempts made, and reports the call to the hooks that
// implement sink.HookWriteClose with the row counts of that plan. A call without batches
// writes and reports nothing.
func WriteCloseCall(hooks []sink.Hook, batches []sink.CloseBatch, write func() (*Plan, int, error)) error {
	if len(batches) == 0 {
		return nil
	}
	plan, attempts, err := write()
	if len(hooks) == 0 {
		return err
	}
	info := sink.WriteCloseInfo{Batches: len(batches), Attempts: attempts, Err: err}
	for _, b := range batches {
		info.Partials += len(b.Partials)
	}
	if err == nil && plan != nil {
		plan.Report(&info)
	}
	report.WriteClose(hooks, info)
	return err
}

// Gate calls gate, unless it is nil, as a close's transaction is about to commit (see
// [sink.GatedWindowWriter]); the transaction commits only when it returns nil. A refusal
// comes back wrapped in an error that [Retryable] never retries.
func Gate(ctx context.Context, gate func(context.Context) error) error {
	if gate == nil {
		return nil
	}
	if err := gate(ctx); err != nil {
		return &refusedError{err: err}
	}
	return nil
}

// Retryable returns transient, except that a gate's refusal (see [Gate]) is never retried,
// whatever error it wraps.
func Retryable(transient func(error) bool) func(error) bool {
	return func(err error) bool {
		var refused *refusedError
		return !errors.As(err, &refused) && transient(err)
	}
}

// refusedError is a gate's refusal.
type refusedError struct{ err error }

func (e *refusedError) Error() string { return "close not committed: " + e.err.Error() }
func (e *refusedError) Unwrap() error { return e.err }
