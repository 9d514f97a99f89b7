package postgres

import (
	"context"
	"errors"
	"io"
	"net"

	"github.com/jackc/pgx/v5/pgconn"
)

// connLostError marks a failure after which the attempt's connection was closed: the server
// went away or the network failed. Whether a commit in flight landed is unknown, so the
// write is retried; every write of this package is safe to repeat.
type connLostError struct{ err error }

func (e *connLostError) Error() string { return "connection lost: " + e.err.Error() }
func (e *connLostError) Unwrap() error { return e.err }

// transientState reports whether a SQLSTATE is worth retrying.
func transientState(code string) bool {
	switch code {
	case "40001", // serialization_failure
		"40P01", // deadlock_detected
		"55P03", // lock_not_available
		"57P01", // admin_shutdown
		"57P02", // crash_shutdown
		"57P03", // cannot_connect_now
		"53300", // too_many_connections
		"58030": // io_error
		return true
	}
	return len(code) == 5 && code[:2] == "08" // connection exceptions
}

// connFailure reports whether err says that the session itself failed, as opposed to one
// statement.
func connFailure(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03" || (len(pgErr.Code) == 5 && pgErr.Code[:2] == "08")
	}
	var lost *connLostError
	var netErr net.Error
	return errors.As(err, &lost) || errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
}

// transient reports whether err is a failure that the same write may overcome later: a
// lost or refused connection, a server shutdown, a serialization failure, a deadlock or a
// lock timeout. Context cancellation is not transient: the caller gave up.
func transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return transientState(pgErr.Code)
	}
	var lost *connLostError
	var connect *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.As(err, &lost), errors.As(err, &connect), errors.As(err, &netErr):
		return true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return true
	}
	return pgconn.SafeToRetry(err)
}
