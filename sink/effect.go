package sink

import (
	"crypto/sha256"
	"errors"
	"fmt"
)

// Operation identifies one effect that is not naturally idempotent (a balance credit). ID is
// stable across redeliveries of the same business operation; Payload is its canonical
// content, whose hash is stored with the marker so that a different operation reusing the
// ID is detected.
type Operation struct {
	ID      string
	Payload []byte
}

// Hash returns the SHA-256 of the payload, as stored in the marker.
func (o Operation) Hash() [sha256.Size]byte { return sha256.Sum256(o.Payload) }

// Outcome is what became of one operation of an effect batch.
type Outcome int

const (
	// Applied: the marker was accepted and the effect committed with it, by this call.
	Applied Outcome = iota + 1
	// Duplicate: a marker with the same ID and payload hash was already committed (by an
	// earlier call, or by an earlier operation of the same batch); the effect was not applied
	// again.
	Duplicate
	// Conflict: a marker with the same ID and another payload hash was committed: a different
	// operation under a reused ID. Nothing was applied; [Result.Err] is a [*ConflictError].
	Conflict
	// Rejected: the effect refused the operation, or touched no row ([ErrNoEffect]): nothing
	// was applied and no marker was stored. [Result.Err] says why.
	Rejected
)

func (o Outcome) String() string {
	switch o {
	case Applied:
		return "applied"
	case Duplicate:
		return "duplicate"
	case Conflict:
		return "conflict"
	case Rejected:
		return "rejected"
	default:
		return fmt.Sprintf("Outcome(%d)", int(o))
	}
}

// Result is the outcome of one operation of an effect batch. Err is nil for [Applied] and
// [Duplicate], a [*ConflictError] for [Conflict], and the refusal for [Rejected]. It is the one
// per-item shape of every effect batch: an effect sink's Apply returns one per operation, the
// effect it runs returns one per operation it was given (Applied or Rejected), and the
// consumer's ApplyEffects one per message. The zero Result has no Outcome: nothing is known
// to be committed, and the consumer stops before such a message rather than admit it.
type Result struct {
	Outcome Outcome
	Err     error
}

// ConflictError reports an operation whose ID has a committed marker with a different
// payload hash: a different operation under a reused ID. Nothing was applied; the message
// belongs in a dead-letter topic.
type ConflictError struct {
	ID         string
	StoredHash []byte
	GivenHash  []byte
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("sink: operation %q conflicts with its stored marker: payload hash %x, stored %x", e.ID, e.GivenHash, e.StoredHash)
}

// ErrNoEffect is wrapped when an effect touched no row: the operation was rolled back and no
// marker was stored, so the operation is not recorded as done.
var ErrNoEffect = errors.New("sink: effect touched no row")

// ErrHorizon is wrapped, with [ErrConfig], when a configured retention horizon (of effect
// markers, or of folded windows) is shorter than the retention of the source that can
// redeliver: an operation could be replayed after its marker is gone and applied twice, or a
// window after its folded stats are gone and not be merged.
var ErrHorizon = errors.New("sink: horizon shorter than the source's retention")
