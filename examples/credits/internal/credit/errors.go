package credit

import "errors"

// Dead-letter classes of the errors of [Decode] and [Credit.Validate].
const (
	// ClassMalformed: not one JSON object of the credit's shape (syntax, types, unknown or
	// repeated fields, trailing data, invalid UTF-8, ids with control characters or too long).
	ClassMalformed = "credit.malformed"
	// ClassMissingField: op_id, account or amount missing, or an id empty.
	ClassMissingField = "credit.missing_field"
	// ClassAmount: an amount that is not positive, or does not fit in an int64.
	ClassAmount = "credit.amount"
)

// ErrInvalid is matched by every [*Error] (errors.Is).
var ErrInvalid = errors.New("credit: invalid credit")

// Error is a message that is not a valid credit.
type Error struct {
	Class string // one of the Class constants
	Field string // the field at fault; empty when the message as a whole is
	Msg   string // what was expected and what was found
}

func (e *Error) Error() string {
	if e.Field == "" {
		return "credit: " + e.Msg
	}
	return "credit: " + e.Field + ": " + e.Msg
}

// ErrorClass returns the dead-letter class of e.
func (e *Error) ErrorClass() string { return e.Class }

// Is makes errors.Is(err, ErrInvalid) true.
func (e *Error) Is(target error) bool { return target == ErrInvalid }
