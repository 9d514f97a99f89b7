package window

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrLate reports an event whose window has already been closed: its end is at or
	// before the watermark the [Windows] has closed through. Nothing was added.
	ErrLate = errors.New("window: event is late")

	// ErrInvalidValue reports a value that is NaN, infinite or larger in magnitude than
	// [MaxValue]. Nothing was added.
	ErrInvalidValue = errors.New("window: invalid value")

	// ErrOutOfRange reports an event time that cannot be expressed as int64 nanoseconds
	// since the Unix epoch (before 1678 or after 2262), or whose window would end past that.
	ErrOutOfRange = errors.New("window: event time out of range")

	// ErrVersion reports serialized [Stats] whose version byte this package does not know.
	ErrVersion = errors.New("window: unsupported stats encoding version")

	// ErrCorrupt reports serialized [Stats] that are truncated, garbled or not in canonical form.
	ErrCorrupt = errors.New("window: corrupt stats encoding")

	// ErrConfig reports an invalid [Config].
	ErrConfig = errors.New("window: invalid config")
)

// LateError is the error returned for a late event. It matches [ErrLate] with errors.Is.
type LateError struct {
	EventTime     time.Time // the rejected event's time
	WindowEnd     time.Time // end of the window the event belongs to
	ClosedThrough time.Time // watermark the Windows has closed through
}

func (e *LateError) Error() string {
	return fmt.Sprintf("window: event at %s is late: its window ends at %s, closed through %s",
		e.EventTime.Format(time.RFC3339Nano), e.WindowEnd.Format(time.RFC3339Nano),
		e.ClosedThrough.Format(time.RFC3339Nano))
}

// Is makes errors.Is(err, ErrLate) true.
func (e *LateError) Is(target error) bool { return target == ErrLate }
