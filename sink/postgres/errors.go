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

// transientStates are the SQLSTATEs worth retrying: the class 08 connection exceptions are
// matched by prefix.
var transientStates = map[string]bool{
	"40001": true, // serialization_failure
	"40P01": true, // deadlock_detected
	"55P03": true, // lock_not_available
	"57P01": true, // admin_shutdown
	"57P02": true, // crash_shutdown
	"57P03": true, // cannot_connect_now
	"53300": true, // too_many_connections
	"58030": true, // io_error
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

// IsTransient reports whether err is a failure that the same write may overcome later: a
// lost or refused connection, a server shutdown, a serialization failure, a deadlock or a
// lock timeout. Context cancellation is not transient: the caller gave up.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return transientStates[pgErr.Code] || (len(pgErr.Code) == 5 && pgErr.Code[:2] == "08")
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
