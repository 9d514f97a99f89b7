package ledger

import "errors"

// Errors returned for misuse of a ledger. They are wrapped with the offending values; test for
// them with [errors.Is].
var (
	// ErrOffsetOrder: an offset was added that is not above the last offset added.
	ErrOffsetOrder = errors.New("ledger: offsets must increase")
	// ErrUnknownOffset: an ack names an offset that was never added to the ledger.
	ErrUnknownOffset = errors.New("ledger: unknown offset")
	// ErrReleased: an ack names an offset below the first pending one: its entry was released
	// already (it was durable and the prefix committable), or it is a gap that was never added.
	ErrReleased = errors.New("ledger: entry already released")
	// ErrNotAckable: an ack names an entry that was added without [Ack].
	ErrNotAckable = errors.New("ledger: entry does not wait for an ack")
	// ErrAlreadyAcked: an ack names an entry that was acked before.
	ErrAlreadyAcked = errors.New("ledger: entry already acked")
	// ErrRegression: closed_through or a flush sequence went back.
	ErrRegression = errors.New("ledger: progress went back")
	// ErrAssigned: a partition was assigned twice without a revoke in between.
	ErrAssigned = errors.New("ledger: partition already assigned")
	// ErrNotAssigned: a partition was used or revoked without being assigned.
	ErrNotAssigned = errors.New("ledger: partition not assigned")
	// ErrNoMetadata: the commit carried no metadata (committed by another tool, or before a
	// watermark existed). Not garbled: the caller restores from closed_through alone.
	ErrNoMetadata = errors.New("ledger: no commit metadata")
	// ErrBadMetadata: the commit metadata is not in a format this version understands. The
	// caller restores from closed_through alone and logs a warning.
	ErrBadMetadata = errors.New("ledger: unreadable commit metadata")
)
