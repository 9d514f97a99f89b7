package postgres

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/streamledger/streamledger/internal/faults"
	"github.com/streamledger/streamledger/sink"
)

// effectBatch is one call of [Effects.Apply]: the operations, what is known of them across
// attempts, and the results of the attempt in progress.
type effectBatch struct {
	ops    []sink.Operation
	effect Effect
	hashes [][sha256.Size]byte
	// next is the position of the next operation with the same ID, -1 for none; firsts holds
	// the first position of every ID, in batch order.
	next   []int
	firsts []int
	// token marks the markers this call inserts, in every attempt.
	token []byte
	// isolate runs each accepted operation's effect alone under a savepoint: set once an
	// effect failed on data that its statement could not attribute to one operation.
	isolate bool

	res []sink.Result // the attempt in progress
	// ran holds the results of the last attempt whose statements all ran: it may have
	// committed although its commit was not acknowledged.
	ran []sink.Result
}

func newEffectBatch(ops []sink.Operation, effect Effect) *effectBatch {
	b := &effectBatch{
		ops: ops, effect: effect,
		hashes: make([][sha256.Size]byte, len(ops)),
		next:   make([]int, len(ops)),
		token:  make([]byte, 16),
	}
	last := make(map[string]int, len(ops))
	for i, op := range ops {
		b.hashes[i] = op.Hash()
		b.next[i] = -1
		if j, ok := last[op.ID]; ok {
			b.next[j] = i
		} else {
			b.firsts = append(b.firsts, i)
		}
		last[op.ID] = i
	}
	return b
}

// isolateError ends an attempt whose effect failed on data (SQLSTATE class 22 or 23) that the
// statement could not attribute to one operation: the attempt runs again, one effect at a
// time.
type isolateError struct{ err error }

func (e *isolateError) Error() string {
	return "effect failed on an operation's data: " + e.err.Error()
}
func (e *isolateError) Unwrap() error { return e.err }

// dataError reports whether err is a data exception or an integrity constraint violation:
// a failure caused by the values of an operation, not by the server or the statement.
func dataError(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && len(pgErr.Code) == 5 && (pgErr.Code[:2] == "22" || pgErr.Code[:2] == "23")
}

// attempt runs one attempt of b in tx: rounds of marker insert, marker read, effect and
// removal of rejected markers, until every operation has its result.
func (e *Effects) attempt(ctx context.Context, tx pgx.Tx, b *effectBatch, n int) error {
	if b.ran != nil {
		committed, err := e.committedBefore(ctx, tx, b)
		if err != nil {
			return err
		}
		if committed {
			b.res = b.ran
			return nil
		}
		b.ran = nil
	}
	b.res = make([]sink.Result, len(b.ops))
	pending := slices.Clone(b.firsts)
	for round := 0; len(pending) > 0; round++ {
		accepted, err := e.insertMarkers(ctx, tx, b, pending)
		if err != nil {
			return err
		}
		if round == 0 {
			a := faults.Attempt{Op: opApplyEffects, N: n, Conn: int64(tx.Conn().PgConn().PID())}
			if err := faults.At(ctx, faults.AfterMarker, a); err != nil {
				return err
			}
		}
		if err := e.readMarkers(ctx, tx, b, pending, accepted); err != nil {
			return err
		}
		if err := e.runEffect(ctx, tx, b, accepted); err != nil {
			return err
		}
		if err := e.forgetRejected(ctx, tx, b, accepted); err != nil {
			return err
		}
		pending = b.follow(pending)
	}
	b.ran = b.res
	return nil
}

// committedBefore reports whether the last attempt that ran all its statements committed:
// its applied operations' markers carry this call's token. A transaction commits whole, so
// one of them is enough. An attempt that applied nothing left nothing to find, and running
// it again is harmless.
func (e *Effects) committedBefore(ctx context.Context, tx pgx.Tx, b *effectBatch) (bool, error) {
	var ids []string
	for i, r := range b.ran {
		if r.Outcome == sink.Applied {
			ids = append(ids, b.ops[i].ID)
		}
	}
	if len(ids) == 0 {
		return false, nil
	}
	var mine int64
	if err := tx.QueryRow(ctx, e.mine, ids, b.token).Scan(&mine); err != nil {
		return false, fmt.Errorf("read this call's markers: %w", err)
	}
	return mine > 0, nil
}

// insertMarkers inserts the markers of pending (positions with distinct IDs), in the order of
// their IDs, so that concurrent batches take the markers' locks in one order and cannot
// deadlock on them. It returns the positions whose marker was accepted, in batch order.
func (e *Effects) insertMarkers(ctx context.Context, tx pgx.Tx, b *effectBatch, pending []int) ([]int, error) {
	byID := slices.Clone(pending)
	slices.SortFunc(byID, func(i, j int) int { return cmp.Compare(b.ops[i].ID, b.ops[j].ID) })
	ids := make([]string, len(byID))
	hashes := make([][]byte, len(byID))
	pos := make(map[string]int, len(byID))
	for k, i := range byID {
		ids[k], hashes[k] = b.ops[i].ID, b.hashes[i][:]
		pos[b.ops[i].ID] = i
	}
	rows, err := tx.Query(ctx, e.insert, ids, hashes, b.token, e.cfg.Clock().UTC())
	if err != nil {
		return nil, fmt.Errorf("insert markers: %w", err)
	}
	var accepted []int
	var id string
	_, err = pgx.ForEachRow(rows, []any{&id}, func() error {
		accepted = append(accepted, pos[id])
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("insert markers: %w", err)
	}
	slices.Sort(accepted)
	return accepted, nil
}

// readMarkers decides the pending operations whose marker was not accepted: a stored marker
// with the same payload hash makes a duplicate, another hash a conflict. One whose marker is
// gone again (pruned meanwhile) stays undecided, for the next round.
func (e *Effects) readMarkers(ctx context.Context, tx pgx.Tx, b *effectBatch, pending, accepted []int) error {
	if len(accepted) == len(pending) {
		return nil
	}
	pos := make(map[string]int, len(pending)-len(accepted))
	ids := make([]string, 0, len(pending)-len(accepted))
	for _, i := range pending {
		if _, ok := slices.BinarySearch(accepted, i); !ok {
			pos[b.ops[i].ID] = i
			ids = append(ids, b.ops[i].ID)
		}
	}
	rows, err := tx.Query(ctx, e.lookup, ids)
	if err != nil {
		return fmt.Errorf("read markers: %w", err)
	}
	var (
		id     string
		stored []byte
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &stored}, func() error {
		i := pos[id]
		b.res[i] = b.against(i, stored)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read markers: %w", err)
	}
	return nil
}

// against is the result of operation i against a committed marker with the hash stored.
func (b *effectBatch) against(i int, stored []byte) sink.Result {
	if bytes.Equal(stored, b.hashes[i][:]) {
		return sink.Result{Outcome: sink.Duplicate}
	}
	given := b.hashes[i]
	return sink.Result{Outcome: sink.Conflict, Err: &sink.ConflictError{ID: b.ops[i].ID, StoredHash: bytes.Clone(stored), GivenHash: given[:]}}
}

// runEffect runs the effect on the accepted operations and records their results: all at
// once, or one at a time under a savepoint when b.isolate is set.
func (e *Effects) runEffect(ctx context.Context, tx pgx.Tx, b *effectBatch, accepted []int) error {
	if len(accepted) == 0 {
		return nil
	}
	if !b.isolate {
		errs, err := b.effect(ctx, tx, accepted)
		if err != nil {
			if dataError(err) {
				return &isolateError{err: err}
			}
			return fmt.Errorf("effect: %w", err)
		}
		return b.record(accepted, errs)
	}
	for _, i := range accepted {
		one := []int{i}
		sp, err := tx.Begin(ctx)
		if err != nil {
			return fmt.Errorf("savepoint: %w", err)
		}
		errs, err := b.effect(ctx, sp, one)
		switch {
		case err != nil && dataError(err):
			if rerr := sp.Rollback(ctx); rerr != nil {
				return fmt.Errorf("rollback to savepoint: %w", rerr)
			}
			errs, err = []error{fmt.Errorf("effect of %q: %w", b.ops[i].ID, err)}, nil
		case err != nil:
			return fmt.Errorf("effect: %w", err)
		default:
			if err := sp.Commit(ctx); err != nil {
				return fmt.Errorf("release savepoint: %w", err)
			}
		}
		if err := b.record(one, errs); err != nil {
			return err
		}
	}
	return nil
}

// record stores the effect's verdict on each of ops.
func (b *effectBatch) record(ops []int, errs []error) error {
	if len(errs) != len(ops) {
		return fmt.Errorf("%w: the effect returned %d results for %d operations", sink.ErrInvalid, len(errs), len(ops))
	}
	for k, i := range ops {
		if errs[k] != nil {
			b.res[i] = sink.Result{Outcome: sink.Rejected, Err: errs[k]}
		} else {
			b.res[i] = sink.Result{Outcome: sink.Applied}
		}
	}
	return nil
}

// forgetRejected deletes the markers of the accepted operations that the effect rejected.
func (e *Effects) forgetRejected(ctx context.Context, tx pgx.Tx, b *effectBatch, accepted []int) error {
	var ids []string
	for _, i := range accepted {
		if b.res[i].Outcome == sink.Rejected {
			ids = append(ids, b.ops[i].ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, e.forget, ids, b.token); err != nil {
		return fmt.Errorf("delete rejected markers: %w", err)
	}
	return nil
}

// follow decides, in memory, the later operations of the IDs of pending that now have a
// marker, and returns the positions the next round must try: the next operation of an ID
// whose operation was rejected (it has no marker), and any operation still undecided.
func (b *effectBatch) follow(pending []int) []int {
	var next []int
	for _, i := range pending {
		var stored []byte
		switch r := b.res[i]; r.Outcome {
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
			stored = b.hashes[i][:]
		}
		for j := b.next[i]; j >= 0; j = b.next[j] {
			b.res[j] = b.against(j, stored)
		}
	}
	slices.Sort(next)
	return next
}
