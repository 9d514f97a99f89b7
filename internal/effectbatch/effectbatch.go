// Package effectbatch holds the database-independent bookkeeping of an effect sink's Apply
// call (sink/postgres and sink/mysql Effects): which operations of a batch share an ID,
// what each operation's result is against a stored marker, which operations a round of
// marker inserts must try, and the results of the attempt that may have committed. A sink
// adds the statements: marker insert and read, the effect, the removal of rejected markers.
package effectbatch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/streamledger/streamledger/internal/retry"
	"github.com/streamledger/streamledger/sink"
)

// TokenSize is the length of a call's token, in bytes.
const TokenSize = 16

// Check validates the arguments of an Apply call; hasEffect says whether the effect is
// non-nil. Misuse wraps [sink.ErrInvalid].
func Check(ops []sink.Operation, hasEffect bool) error {
	if !hasEffect {
		return fmt.Errorf("%w: nil effect", sink.ErrInvalid)
	}
	for i, op := range ops {
		if op.ID == "" {
			return fmt.Errorf("%w: operation %d of the batch has no ID", sink.ErrInvalid, i)
		}
	}
	return nil
}

// Batch is one call of an effect sink's Apply: the operations, what is known of them across
// attempts, and the results of the attempt in progress.
type Batch struct {
	Ops    []sink.Operation
	Hashes [][sha256.Size]byte
	// Token marks the markers this call inserts, in every attempt.
	Token []byte
	// Isolate runs each accepted operation's effect alone under a savepoint: set once an
	// effect failed on data that its statement could not attribute to one operation.
	Isolate bool
	// Res holds the results of the attempt in progress; zero for an undecided operation.
	Res []sink.Result

	// next is the position of the next operation with the same ID, -1 for none; firsts holds
	// the first position of every ID that reaches the database, in batch order.
	next   []int
	firsts []int
	// refused holds the results decided before any statement (IDs the sink cannot store).
	refused []sink.Result
	// ran holds the results of the last attempt whose statements all ran: it may have
	// committed although its commit was not acknowledged.
	ran []sink.Result
}

// New returns the batch of ops with a token read from rand. refuse, if not nil, rejects
// operations before any statement (an ID the marker table cannot hold): every operation
// with that ID gets the error it returns, as [sink.Rejected].
func New(ops []sink.Operation, rand io.Reader, refuse func(sink.Operation) error) (*Batch, error) {
	b := &Batch{
		Ops:    ops,
		Hashes: make([][sha256.Size]byte, len(ops)),
		Token:  make([]byte, TokenSize),
		next:   make([]int, len(ops)),
	}
	if _, err := io.ReadFull(rand, b.Token); err != nil {
		return nil, fmt.Errorf("sink: token for a batch of %d operations: %w", len(ops), err)
	}
	last := make(map[string]int, len(ops))
	for i, op := range ops {
		b.Hashes[i] = op.Hash()
		b.next[i] = -1
		if j, ok := last[op.ID]; ok {
			b.next[j] = i
		} else if err := refusal(refuse, op); err != nil {
			b.refuse(i, err)
		} else {
			b.firsts = append(b.firsts, i)
		}
		last[op.ID] = i
	}
	return b, nil
}

func refusal(refuse func(sink.Operation) error, op sink.Operation) error {
	if refuse == nil {
		return nil
	}
	return refuse(op)
}

func (b *Batch) refuse(i int, err error) {
	if b.refused == nil {
		b.refused = make([]sink.Result, len(b.Ops))
	}
	b.refused[i] = sink.Result{Outcome: sink.Rejected, Err: err}
}

// Start begins an attempt: it clears the results and returns the positions the first round
// must try. Refused operations keep their results.
func (b *Batch) Start() []int {
	b.Res = make([]sink.Result, len(b.Ops))
	for i, r := range b.refused {
		if r.Outcome != 0 {
			b.Res[i] = r
			for j := b.next[i]; j >= 0; j = b.next[j] {
				b.Res[j] = r
			}
		}
	}
	return slices.Clone(b.firsts)
}

// Ran records that every statement of the attempt ran: its results stand if it committed.
func (b *Batch) Ran() { b.ran = b.Res }

// Replay returns the ID of an operation that the last attempt whose statements all ran
// applied, if there is one: if that operation's marker carries the token, that attempt
// committed (a transaction commits whole) and [Batch.Committed] returns its results. An
// attempt that applied nothing left nothing to find, and running it again is harmless.
func (b *Batch) Replay() (string, bool) {
	for i, r := range b.ran {
		if r.Outcome == sink.Applied {
			return b.Ops[i].ID, true
		}
	}
	b.ran = nil
	return "", false
}

// Committed takes the results of the last attempt that ran, found committed.
func (b *Batch) Committed() { b.Res = b.ran }

// Forget drops the last attempt's results: it did not commit.
func (b *Batch) Forget() { b.ran = nil }

// Against is the result of operation i against a committed marker with the hash stored.
func (b *Batch) Against(i int, stored []byte) sink.Result {
	if bytes.Equal(stored, b.Hashes[i][:]) {
		return sink.Result{Outcome: sink.Duplicate}
	}
	given := b.Hashes[i]
	return sink.Result{Outcome: sink.Conflict, Err: &sink.ConflictError{ID: b.Ops[i].ID, StoredHash: bytes.Clone(stored), GivenHash: given[:]}}
}

// Record stores the effect's result of each of ops: [sink.Applied] with no error, or
// [sink.Rejected] with the refusal. Anything else is the effect's mistake, an error wrapping
// [sink.ErrInvalid]: the attempt fails and nothing of it commits.
func (b *Batch) Record(ops []int, res []sink.Result) error {
	if len(res) != len(ops) {
		return fmt.Errorf("%w: the effect returned %d results for %d operations", sink.ErrInvalid, len(res), len(ops))
	}
	for k, i := range ops {
		if err := checkResult(res[k]); err != nil {
			return fmt.Errorf("%w: the effect's result of operation %q: %w", sink.ErrInvalid, b.Ops[i].ID, err)
		}
	}
	for k, i := range ops {
		b.Res[i] = res[k]
	}
	return nil
}

// checkResult reports why r is not a result an effect may return.
func checkResult(r sink.Result) error {
	switch {
	case r.Outcome == sink.Applied && r.Err != nil:
		return fmt.Errorf("applied, with the error %q", r.Err)
	case r.Outcome == sink.Rejected && r.Err == nil:
		return errors.New("rejected without a reason")
	case r.Outcome != sink.Applied && r.Outcome != sink.Rejected:
		return fmt.Errorf("expected applied or rejected, found %s", r.Outcome)
	}
	return nil
}

// RejectedIDs returns the IDs of the accepted operations that the effect rejected: their
// markers must be deleted in the same transaction.
func (b *Batch) RejectedIDs(accepted []int) []string {
	var ids []string
	for _, i := range accepted {
		if b.Res[i].Outcome == sink.Rejected {
			ids = append(ids, b.Ops[i].ID)
		}
	}
	return ids
}

// Follow decides, in memory, the later operations of the IDs of pending that now have a
// marker, and returns the positions the next round must try: the next operation of an ID
// whose operation was rejected (it has no marker), and any operation still undecided.
func (b *Batch) Follow(pending []int) []int {
	var next []int
	for _, i := range pending {
		var stored []byte
		switch r := b.Res[i]; r.Outcome {
		case 0:
			next = append(next, i)
			continue
		case sink.Rejected:
			if j := b.next[i]; j >= 0 {
				next = append(next, j)
			}
			continue
		case sink.Conflict:
			var conflict *sink.ConflictError
			errors.As(r.Err, &conflict)
			stored = conflict.StoredHash
		default:
			stored = b.Hashes[i][:]
		}
		for j := b.next[i]; j >= 0; j = b.next[j] {
			b.Res[j] = b.Against(j, stored)
		}
	}
	slices.Sort(next)
	return next
}

// Do runs attempt under the retry policy p, as the whole of an Apply call: a transient
// failure retries the batch whole, and an attempt that ends with an [*IsolateError] runs
// again at once with [Batch.Isolate] set (not a retry: the same attempt, one effect at a
// time).
func (b *Batch) Do(ctx context.Context, p sink.RetryPolicy, op string, transient func(error) bool, attempt func(ctx context.Context, n int) error) error {
	return retry.Do(ctx, p, op, transient, func(ctx context.Context, n int) error {
		for {
			err := attempt(ctx, n)
			var isolate *IsolateError
			if errors.As(err, &isolate) && !b.Isolate {
				b.Isolate = true
				continue
			}
			return err
		}
	})
}

// IsolateError ends an attempt whose effect failed on data that the statement could not
// attribute to one operation: the attempt runs again, one effect at a time.
type IsolateError struct{ Err error }

func (e *IsolateError) Error() string {
	return "effect failed on an operation's data: " + e.Err.Error()
}
func (e *IsolateError) Unwrap() error { return e.Err }
