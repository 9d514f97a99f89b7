package mysql

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"

	"github.com/go-sql-driver/mysql"
)

// Server error numbers this package tells apart.
const (
	errLockWaitTimeout  = 1205 // ER_LOCK_WAIT_TIMEOUT
	errDeadlock         = 1213 // ER_LOCK_DEADLOCK
	errServerShutdown   = 1053 // ER_SERVER_SHUTDOWN
	errTooManyConns     = 1040 // ER_CON_COUNT_ERROR
	errQueryInterrupted = 1317 // ER_QUERY_INTERRUPTED
	errConnKilled       = 1927 // ER_CONNECTION_KILLED (MariaDB)
	errGoneAway         = 2006 // CR_SERVER_GONE_ERROR
	errLost             = 2013 // CR_SERVER_LOST
	errDupEntry         = 1062 // ER_DUP_ENTRY
	errDupFieldName     = 1060 // ER_DUP_FIELDNAME
)

// connLostError marks a failure after which the attempt's connection is unusable: the
// server went away or the network failed. Whether a commit in flight landed is unknown, so
// the write is retried; every write of this package is safe to repeat.
type connLostError struct{ err error }

func (e *connLostError) Error() string { return "connection lost: " + e.err.Error() }
func (e *connLostError) Unwrap() error { return e.err }

// serverCode returns the MySQL error number of err, or 0.
func serverCode(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// connFailure reports whether err says that the session itself failed, as opposed to one
// statement: the connection must not be used again.
func connFailure(err error) bool {
	switch serverCode(err) {
	case errServerShutdown, errConnKilled, errGoneAway, errLost:
		return true
	}
	var lost *connLostError
	var netErr net.Error
	return errors.As(err, &lost) || errors.As(err, &netErr) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
}

// transient reports whether err is a failure that the same write may overcome later: a lost
// or refused connection, a server shutdown, a deadlock (1213), a lock wait timeout (1205) or
// too many connections. Context cancellation is not transient: the caller gave up.
func transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	switch serverCode(err) {
	case errDeadlock, errLockWaitTimeout, errTooManyConns, errQueryInterrupted:
		return true
	}
	return connFailure(err)
}
