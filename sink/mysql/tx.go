package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"

	"github.com/streamledger/streamledger/internal/faults"
)

// attemptTx runs one attempt of op: fn inside a READ COMMITTED transaction on a connection
// of db, with the injected faults (package faults) called at their points. READ COMMITTED is
// set explicitly: InnoDB's default REPEATABLE READ takes gap locks on the writes' range
// reads, which turns concurrent writers of neighbouring keys into deadlocks, and each
// statement after a lock must see what the writer that held it committed.
func attemptTx(ctx context.Context, db *sql.DB, a faults.Attempt, fn func(ctx context.Context, tx *sql.Tx) error) (err error) {
	if err := faults.At(ctx, faults.BeforeBegin, a); err != nil {
		return err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil && connFailure(err) {
			// Hand the connection back as bad (database/sql discards a connection whose
			// Raw call returns driver.ErrBadConn), so that the retry gets a live one.
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
			err = &connLostError{err: err}
		}
		_ = conn.Close()
	}()
	if faults.Armed(ctx) {
		if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&a.Conn); err != nil {
			return fmt.Errorf("connection id: %w", err)
		}
	}
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			_ = tx.Rollback()
		}
	}()
	if err := fn(ctx, tx); err != nil {
		return err
	}
	if err := faults.At(ctx, faults.BeforeCommit, a); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	committed = true
	return faults.At(ctx, faults.AfterCommit, a)
}
