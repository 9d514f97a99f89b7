package service

import (
	"errors"
	"fmt"
	"time"

	"github.com/streamledger/streamledger/ledger/consumer"
)

// Dead-letter classes of the credits the sink refuses, beside those of package credit
// (malformed, missing_field, amount) and accounts.ClassRejected.
const (
	// ClassUnknownAccount: the credit's account does not exist; its effect touched no row,
	// so the transaction was rolled back with its marker.
	ClassUnknownAccount = "credit.unknown_account"
	// ClassConflict: the operation id has a marker for a different credit (another account or
	// amount): an id reused for another operation. Nothing was applied.
	ClassConflict = "credit.conflict"
	// ClassBeyondHorizon: the credit is older than the marker horizon and has no marker:
	// whether it was applied before its marker was pruned cannot be told, so it is not
	// applied. It needs reconciliation, not a replay.
	ClassBeyondHorizon = "credit.beyond_horizon"
)

var (
	// ErrConfig is wrapped by every error of [New] about its [Config] (with
	// consumer.ErrConfig for the consumer runtime's part of it).
	ErrConfig = errors.New("service: invalid configuration")
	// ErrAborted is returned by [Service.Run] after [Service.Abort]: the consumer stopped
	// where it was, without committing anything more. It is the runtime's consumer.ErrAborted.
	ErrAborted = consumer.ErrAborted
	// ErrRunning is returned by a second call of [Service.Run]; it is the runtime's
	// consumer.ErrRunning.
	ErrRunning = consumer.ErrRunning
)

// HorizonError is a credit older than the marker horizon that found no marker: it is
// refused, rolled back and dead-lettered, because its marker may have been pruned after it was
// applied, and applying it again would credit twice.
type HorizonError struct {
	ID        string
	Timestamp time.Time     // the record's timestamp; zero when it had none
	Age       time.Duration // how old it was when judged
	Horizon   time.Duration
}

func (e *HorizonError) Error() string {
	if e.Timestamp.IsZero() {
		return fmt.Sprintf("service: credit %q has no timestamp and no marker: its age cannot be checked against the marker horizon %v", e.ID, e.Horizon)
	}
	return fmt.Sprintf("service: credit %q is %v old, beyond the marker horizon %v, and has no marker: "+
		"it may have been applied before its marker was pruned", e.ID, e.Age, e.Horizon)
}

// ErrorClass returns [ClassBeyondHorizon].
func (e *HorizonError) ErrorClass() string { return ClassBeyondHorizon }

// refusal is a credit the sink refused for a reason that belongs to the credit, not to the
// infrastructure: it is dead-lettered with its class.
type refusal struct {
	class string
	msg   string
	err   error
}

func (e *refusal) Error() string      { return e.msg + ": " + e.err.Error() }
func (e *refusal) Unwrap() error      { return e.err }
func (e *refusal) ErrorClass() string { return e.class }
