package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamledger/streamledger/internal/faults"
)

// attemptTx runs one attempt of op: fn inside a READ COMMITTED transaction on a connection of
// pool, with the injected faults (package faults) called at their points. READ COMMITTED is set
// explicitly because the close path depends on it: each statement after the advisory locks must
// see what the writer that held them committed, whatever the server's default isolation is.
func attemptTx(ctx context.Context, pool *pgxpool.Pool, a faults.Attempt, fn func(ctx context.Context, tx pgx.Tx) error) (err error) {
	if err := faults.At(ctx, faults.BeforeBegin, a); err != nil {
		return err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	a.Conn = int64(conn.Conn().PgConn().PID())
	defer func() {
		// A closed connection means the failure was the connection's, whatever error
		// surfaced first; the pool discards it on release.
		if err == nil {
			return
		}
		if conn.Conn().IsClosed() {
			err = &connLostError{err: err}
		} else if connFailure(err) {
			// The server said the session is going away; don't hand the connection out
			// again for the retry to trip on.
			_ = conn.Conn().Close(context.WithoutCancel(ctx))
		}
	}()
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			// Rollback after a failure; with a lost connection this is a no-op and the
			// server has rolled back already.
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if err := fn(ctx, tx); err != nil {
		return err
	}
	if err := faults.At(ctx, faults.BeforeCommit, a); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	committed = true
	return faults.At(ctx, faults.AfterCommit, a)
}
