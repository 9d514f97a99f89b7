package dlq

import (
	"errors"
	"fmt"
)

var (
	// ErrNotDeadLetter means a message carries no [HeaderVersion]: it was not written by this
	// package.
	ErrNotDeadLetter = errors.New("dlq: not a dead letter")
	// ErrBadHeader means a reserved header is missing, repeated or malformed; the message names
	// the header, what was expected and what was found.
	ErrBadHeader = errors.New("dlq: malformed dead-letter header")
	// ErrInvalid means a value passed to this package cannot be used as it is (an empty topic, a
	// negative partition, a malformed topic name).
	ErrInvalid = errors.New("dlq: invalid argument")
	// ErrConfig means a [Policy] cannot be used; the message names the field and says why.
	ErrConfig = errors.New("dlq: invalid configuration")
)

// headerError describes a reserved header that is missing, repeated or malformed.
type headerError struct {
	Header string // the header's name
	Value  []byte // the value found; nil when the header is missing
	Reason string // what was expected
}

// maxQuoted bounds how much of a bad header value an error message repeats.
const maxQuoted = 64

func (e *headerError) Error() string {
	if e.Value == nil && e.Reason == "missing" {
		return fmt.Sprintf("dlq: header %s is missing", e.Header)
	}
	v := e.Value
	suffix := ""
	if len(v) > maxQuoted {
		v, suffix = v[:maxQuoted], "..."
	}
	return fmt.Sprintf("dlq: header %s: %s, found %q%s", e.Header, e.Reason, v, suffix)
}

// Unwrap returns [ErrBadHeader].
func (e *headerError) Unwrap() error { return ErrBadHeader }
