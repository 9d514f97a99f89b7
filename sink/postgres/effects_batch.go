package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/streamledger/streamledger/internal/effectbatch"
	"github.com/streamledger/streamledger/internal/faults"
	"github.com/streamledger/streamledger/sink"
)

// dataError reports whether err is a data exception or an integrity constraint violation:
// a failure caused by the values of an operation, not by the server or the statement.
func dataError(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && len(pgErr.Code) == 5 && (pgErr.Code[:2] == "22" || pgErr.Code[:2] == "23")
}

// attempt runs one attempt of b in tx: rounds of marker insert, marker read, effect and
// removal of rejected markers, until every operation has its result.
func (e *Effects) attempt(ctx context.Context, tx pgx.Tx, b *effectbatch.Batch, effect Effect, n int) error {
	if id, ok := b.Replay(); ok {
		var mine int64
		if err := tx.QueryRow(ctx, e.mine, []string{id}, b.Token).Scan(&mine); err != nil {
			return fmt.Errorf("read this call's markers: %w", err)
		}
		if mine > 0 {
			b.Committed()
			return nil
		}
		b.Forget()
	}
	pending := b.Start()
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
		if err := e.runEffect(ctx, tx, b, effect, accepted); err != nil {
			return err
		}
		if ids := b.RejectedIDs(accepted); len(ids) > 0 {
			if _, err := tx.Exec(ctx, e.forget, ids, b.Token); err != nil {
				return fmt.Errorf("delete rejected markers: %w", err)
			}
		}
		pending = b.Follow(pending)
	}
	b.Ran()
	return nil
}

// insertMarkers inserts the markers of pending (positions with distinct IDs), in the order of
// their IDs, so that concurrent batches take the markers' locks in one order and cannot
// deadlock on them. It returns the positions whose marker was accepted, in batch order.
func (e *Effects) insertMarkers(ctx context.Context, tx pgx.Tx, b *effectbatch.Batch, pending []int) ([]int, error) {
	byID := slices.Clone(pending)
	slices.SortFunc(byID, func(i, j int) int { return cmp.Compare(b.Ops[i].ID, b.Ops[j].ID) })
	ids := make([]string, len(byID))
	hashes := make([][]byte, len(byID))
	pos := make(map[string]int, len(byID))
	for k, i := range byID {
		ids[k], hashes[k] = b.Ops[i].ID, b.Hashes[i][:]
		pos[b.Ops[i].ID] = i
	}
	rows, err := tx.Query(ctx, e.insert, ids, hashes, b.Token, e.cfg.Clock().UTC())
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
func (e *Effects) readMarkers(ctx context.Context, tx pgx.Tx, b *effectbatch.Batch, pending, accepted []int) error {
	if len(accepted) == len(pending) {
		return nil
	}
	pos := make(map[string]int, len(pending)-len(accepted))
	ids := make([]string, 0, len(pending)-len(accepted))
	for _, i := range pending {
		if _, ok := slices.BinarySearch(accepted, i); !ok {
			pos[b.Ops[i].ID] = i
			ids = append(ids, b.Ops[i].ID)
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
		b.Res[i] = b.Against(i, stored)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read markers: %w", err)
	}
	return nil
}

// runEffect runs the effect on the accepted operations and records their results: all at
// once, or one at a time under a savepoint when b.Isolate is set.
func (e *Effects) runEffect(ctx context.Context, tx pgx.Tx, b *effectbatch.Batch, effect Effect, accepted []int) error {
	if len(accepted) == 0 {
		return nil
	}
	if !b.Isolate {
		res, err := effect(ctx, tx, accepted)
		if err != nil {
			if dataError(err) {
				return &effectbatch.IsolateError{Err: err}
			}
			return fmt.Errorf("effect: %w", err)
		}
		return b.Record(accepted, res)
	}
	for _, i := range accepted {
		one := []int{i}
		sp, err := tx.Begin(ctx)
		if err != nil {
			return fmt.Errorf("savepoint: %w", err)
		}
		res, err := effect(ctx, sp, one)
		switch {
		case err != nil && dataError(err):
			if rerr := sp.Rollback(ctx); rerr != nil {
				return fmt.Errorf("rollback to savepoint: %w", rerr)
			}
			res, err = []sink.Result{{Outcome: sink.Rejected, Err: fmt.Errorf("effect of %q: %w", b.Ops[i].ID, err)}}, nil
		case err != nil:
			return fmt.Errorf("effect: %w", err)
		default:
			if err := sp.Commit(ctx); err != nil {
				return fmt.Errorf("release savepoint: %w", err)
			}
		}
		if err := b.Record(one, res); err != nil {
			return err
		}
	}
	return nil
}
