package mysql

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/streamledger/streamledger/internal/effectbatch"
	"github.com/streamledger/streamledger/internal/faults"
	"github.com/streamledger/streamledger/sink"
)

// Server errors that report an operation's data without a class 22 or 23 SQLSTATE.
const (
	errTruncatedWrongValue = 1366 // ER_TRUNCATED_WRONG_VALUE_FOR_FIELD (HY000)
	errCheckViolated       = 3819 // ER_CHECK_CONSTRAINT_VIOLATED, MySQL 8 (HY000)
	errConstraintFailed    = 4025 // ER_CONSTRAINT_FAILED, MariaDB (23000)
)

// dataError reports whether err is a data exception or an integrity constraint violation:
// a failure caused by the values of an operation, not by the server or the statement.
func dataError(err error) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	switch me.Number {
	case errTruncatedWrongValue, errCheckViolated, errConstraintFailed:
		return true
	}
	class := string(me.SQLState[:2])
	return class == "22" || class == "23"
}

// attempt runs one attempt of b in tx: rounds of marker insert, marker read, effect and
// removal of rejected markers, until every operation has its result.
func (e *Effects) attempt(ctx context.Context, tx *sql.Tx, b *effectbatch.Batch, effect Effect, n int) error {
	if id, ok := b.Replay(); ok {
		var one int
		err := tx.QueryRowContext(ctx, e.mineSQL(), id, b.Token).Scan(&one)
		switch {
		case err == nil:
			b.Committed()
			return nil
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("read this call's markers: %w", err)
		}
		b.Forget()
	}
	pending := b.Start()
	now := e.cfg.Clock().UTC().Truncate(time.Microsecond)
	for round := 0; len(pending) > 0; round++ {
		if err := e.insertMarkers(ctx, tx, b, pending, now); err != nil {
			return err
		}
		if round == 0 && faults.Armed(ctx) {
			a := faults.Attempt{Op: opApplyEffects, N: n}
			if err := tx.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&a.Conn); err != nil {
				return fmt.Errorf("connection id: %w", err)
			}
			if err := faults.At(ctx, faults.AfterMarker, a); err != nil {
				return err
			}
		}
		accepted, err := e.readMarkers(ctx, tx, b, pending)
		if err != nil {
			return err
		}
		if err := e.runEffect(ctx, tx, b, effect, accepted); err != nil {
			return err
		}
		if err := e.forget(ctx, tx, b, b.RejectedIDs(accepted)); err != nil {
			return err
		}
		pending = b.Follow(pending)
	}
	b.Ran()
	return nil
}

// chunks calls fn with consecutive parts of s of at most size elements.
func chunks[T any](s []T, size int, fn func(part []T) error) error {
	for len(s) > 0 {
		n := min(len(s), size)
		if err := fn(s[:n]); err != nil {
			return err
		}
		s = s[n:]
	}
	return nil
}

// insertMarkers inserts the markers of pending (positions with distinct IDs), in the order of
// their IDs, so that concurrent batches take the markers' locks in one order.
func (e *Effects) insertMarkers(ctx context.Context, tx *sql.Tx, b *effectbatch.Batch, pending []int, now time.Time) error {
	byID := slices.Clone(pending)
	slices.SortFunc(byID, func(i, j int) int { return cmp.Compare(b.Ops[i].ID, b.Ops[j].ID) })
	return chunks(byID, e.chunk, func(part []int) error {
		args := make([]any, 0, 4*len(part))
		for _, i := range part {
			args = append(args, b.Ops[i].ID, b.Hashes[i][:], b.Token, now)
		}
		if _, err := tx.ExecContext(ctx, e.insertSQL(len(part)), args...); err != nil {
			return fmt.Errorf("insert markers: %w", err)
		}
		return nil
	})
}

// readMarkers reads the markers of pending back and returns the positions whose marker this
// call inserted (it carries the token), in batch order. The others are decided against the
// committed marker: the same payload hash makes a duplicate, another hash a conflict. One
// whose marker is gone again (pruned meanwhile) stays undecided, for the next round.
func (e *Effects) readMarkers(ctx context.Context, tx *sql.Tx, b *effectbatch.Batch, pending []int) ([]int, error) {
	pos := make(map[string]int, len(pending))
	ids := make([]any, len(pending))
	for k, i := range pending {
		pos[b.Ops[i].ID] = i
		ids[k] = b.Ops[i].ID
	}
	var accepted []int
	err := chunks(ids, e.chunk, func(part []any) error {
		rows, err := tx.QueryContext(ctx, e.lookupSQL(len(part)), part...)
		if err != nil {
			return err
		}
		defer rows.Close()
		var id, stored, token []byte
		for rows.Next() {
			if err := rows.Scan(&id, &stored, &token); err != nil {
				return err
			}
			i := pos[string(id)]
			if string(token) == string(b.Token) {
				accepted = append(accepted, i)
			} else {
				b.Res[i] = b.Against(i, stored)
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("read markers: %w", err)
	}
	slices.Sort(accepted)
	return accepted, nil
}

// runEffect runs the effect on the accepted operations and records their results: all at
// once, or one at a time under a savepoint when b.Isolate is set.
func (e *Effects) runEffect(ctx context.Context, tx *sql.Tx, b *effectbatch.Batch, effect Effect, accepted []int) error {
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
		if _, err := tx.ExecContext(ctx, "SAVEPOINT effect"); err != nil {
			return fmt.Errorf("savepoint: %w", err)
		}
		res, err := effect(ctx, tx, one)
		switch {
		case err != nil && dataError(err):
			if _, rerr := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT effect"); rerr != nil {
				return fmt.Errorf("rollback to savepoint: %w", rerr)
			}
			res = []sink.Result{{Outcome: sink.Rejected, Err: fmt.Errorf("effect of %q: %w", b.Ops[i].ID, err)}}
		case err != nil:
			return fmt.Errorf("effect: %w", err)
		}
		if _, err := tx.ExecContext(ctx, "RELEASE SAVEPOINT effect"); err != nil {
			return fmt.Errorf("release savepoint: %w", err)
		}
		if err := b.Record(one, res); err != nil {
			return err
		}
	}
	return nil
}

// forget deletes the markers this call inserted for ids: the effect rejected them.
func (e *Effects) forget(ctx context.Context, tx *sql.Tx, b *effectbatch.Batch, ids []string) error {
	for _, id := range ids {
		if _, err := tx.ExecContext(ctx, e.forgetSQL(), id, b.Token); err != nil {
			return fmt.Errorf("delete rejected markers: %w", err)
		}
	}
	return nil
}
