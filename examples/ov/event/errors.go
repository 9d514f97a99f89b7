package event

import (
	"errors"
	"fmt"
)

// Sentinels matched by the typed errors with errors.Is.
var (
	// ErrSyntax is matched by [*SyntaxError].
	ErrSyntax = errors.New("event: malformed JSON")
	// ErrVersion is matched by [*VersionError].
	ErrVersion = errors.New("event: unknown schema version")
	// ErrSchema is matched by [*FieldError].
	ErrSchema = errors.New("event: schema violation")
	// ErrRange is matched by [*RangeError].
	ErrRange = errors.New("event: value out of range")
)

// Dead-letter classes returned by the errors' ErrorClass methods.
const (
	ClassSyntax           = "syntax"
	ClassVersion          = "schema.version"
	ClassMissing          = "schema.missing"
	ClassType             = "schema.type"
	ClassUnknownField     = "schema.unknown-field"
	ClassDuplicateField   = "schema.duplicate-field"
	ClassFormat           = "schema.format"
	ClassRangeCoordinates = "range.coordinates"
	ClassRangeBearing     = "range.bearing"
	ClassRangeDelay       = "range.delay"
	ClassRangeTime        = "range.time"
)

// SyntaxError is input that is not one JSON object: truncated, garbled, followed by more data,
// or another kind of JSON value.
type SyntaxError struct {
	Offset int    // byte offset of the fault
	Msg    string // what was expected and what was found
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("event: malformed JSON at byte %d: %s", e.Offset, e.Msg)
}

// ErrorClass returns [ClassSyntax].
func (e *SyntaxError) ErrorClass() string { return ClassSyntax }

// Is makes errors.Is(err, ErrSyntax) true.
func (e *SyntaxError) Is(target error) bool { return target == ErrSyntax }

// VersionError is a message whose "version" is not [Version].
type VersionError struct {
	Found string // the version as written in the message
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("event: schema version %d expected, found %s", Version, e.Found)
}

// ErrorClass returns [ClassVersion].
func (e *VersionError) ErrorClass() string { return ClassVersion }

// Is makes errors.Is(err, ErrVersion) true.
func (e *VersionError) Is(target error) bool { return target == ErrVersion }

// FieldProblem is what is wrong with a field in a [*FieldError].
type FieldProblem uint8

// The problems a [*FieldError] reports.
const (
	Missing        FieldProblem = iota + 1 // required and absent or null
	WrongType                              // another JSON type than the schema's
	UnknownField                           // not defined by this version
	DuplicateField                         // given twice
	BadFormat                              // right type, wrong form (empty id, bad time)
)

func (p FieldProblem) String() string {
	switch p {
	case Missing:
		return "missing"
	case WrongType:
		return "wrong type"
	case UnknownField:
		return "unknown field"
	case DuplicateField:
		return "duplicate field"
	case BadFormat:
		return "bad format"
	}
	return fmt.Sprintf("FieldProblem(%d)", uint8(p))
}

// FieldError is a message that is valid JSON but does not follow the schema.
type FieldError struct {
	Field    string
	Problem  FieldProblem
	Expected string
	Found    string
}

func (e *FieldError) Error() string {
	switch e.Problem {
	case Missing:
		return fmt.Sprintf("event: field %q is required (%s), found %s", e.Field, e.Expected, e.Found)
	case UnknownField:
		return fmt.Sprintf("event: field %q is not defined by schema version %d", e.Field, Version)
	case DuplicateField:
		return fmt.Sprintf("event: field %q appears more than once", e.Field)
	}
	return fmt.Sprintf("event: field %q: %s expected, found %s", e.Field, e.Expected, e.Found)
}

// ErrorClass returns the class of the problem, such as [ClassMissing].
func (e *FieldError) ErrorClass() string {
	switch e.Problem {
	case Missing:
		return ClassMissing
	case WrongType:
		return ClassType
	case UnknownField:
		return ClassUnknownField
	case DuplicateField:
		return ClassDuplicateField
	}
	return ClassFormat
}

// Is makes errors.Is(err, ErrSchema) true.
func (e *FieldError) Is(target error) bool { return target == ErrSchema }

// RangeError is a well-formed value outside the range the [Decoder] accepts.
type RangeError struct {
	Field    string
	Class    string // one of the range classes, such as [ClassRangeCoordinates]
	Found    string
	Expected string
}

func (e *RangeError) Error() string {
	return fmt.Sprintf("event: field %q out of range: %s expected, found %s", e.Field, e.Expected, e.Found)
}

// ErrorClass returns e.Class.
func (e *RangeError) ErrorClass() string { return e.Class }

// Is makes errors.Is(err, ErrRange) true.
func (e *RangeError) Is(target error) bool { return target == ErrRange }
