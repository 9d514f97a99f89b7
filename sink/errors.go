package sink

import (
	"errors"
	"fmt"
)

// ErrConfig is wrapped by every configuration mistake a constructor finds (postgres.New,
// mysql.New, their NewEffects, sinktest.NewMemory: a field out of range, a spec that cannot
// be a table, a horizon shorter than the source's retention, a missing connection), and by a
// Migrate that cannot place the tables where the configuration says (a MySQL DSN that names
// no database). The message names the field. Nothing was created or written.
var ErrConfig = errors.New("sink: invalid configuration")

// ErrInvalid is wrapped by every error that reports bad input at call time: a batch, row, key
// or operation that the caller must fix. Nothing was written.
var ErrInvalid = errors.New("sink: invalid input")

// WriteError reports a write that did not commit, or whose commit could not be confirmed
// and that was not confirmed by a retry. Nothing it was asked to write may be assumed
// durable.
type WriteError struct {
	// Op names the operation, such as "write close".
	Op string
	// Attempts is how many attempts were made.
	Attempts int
	// Transient is true when the last failure was of a kind that may succeed later
	// (connection lost, server shutdown, serialization failure, deadlock) and retrying
	// stopped because the attempts ran out or the context ended. A false value is a
	// permanent failure: retrying the same write fails the same way.
	Transient bool
	// Err is the last failure (joined with the context's error when the context ended).
	Err error
}

func (e *WriteError) Error() string {
	kind := "permanent"
	if e.Transient {
		kind = "transient"
	}
	return fmt.Sprintf("sink: %s failed after %d attempt(s) (%s): %v", e.Op, e.Attempts, kind, e.Err)
}

func (e *WriteError) Unwrap() error { return e.Err }

// IsTransient reports whether err is a [*WriteError] whose last failure was transient.
func IsTransient(err error) bool {
	var we *WriteError
	return errors.As(err, &we) && we.Transient
}
