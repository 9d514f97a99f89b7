package sink

import (
	"errors"
	"fmt"
	"time"
)

// ErrInvalid is wrapped by every error that reports misuse: a batch, row, spec or operation
// that the caller must fix. Nothing was written.
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

// DefaultHorizon is how long a sink keeps what it needs to recognise a redelivery (folded
// windows, effect markers) when a configuration leaves its horizon zero.
const DefaultHorizon = 7 * 24 * time.Hour

// Horizon resolves a configured horizon h against the source's retention, the way every
// sink configuration does: zero means [DefaultHorizon] and negative means forever (returned
// as 0). A zero retention declares nothing; a positive one is how far back the source can
// redeliver, and a negative one a source that keeps records forever. A finite horizon
// shorter than the retention is refused with an error wrapping [ErrHorizon] that names the
// fields (field and retentionField): a redelivery from beyond it would not be recognised.
func Horizon(h, retention time.Duration, field, retentionField string) (time.Duration, error) {
	switch {
	case h == 0:
		h = DefaultHorizon
	case h < 0:
		return 0, nil
	}
	switch {
	case retention < 0:
		return 0, fmt.Errorf("%w: %s %v is finite, but %s is negative (the source keeps records forever): set %s negative too",
			ErrHorizon, field, h, retentionField, field)
	case retention > 0 && h < retention:
		return 0, fmt.Errorf("%w: %s %v is shorter than %s %v: a redelivery from before the horizon would not be recognised",
			ErrHorizon, field, h, retentionField, retention)
	}
	return h, nil
}
