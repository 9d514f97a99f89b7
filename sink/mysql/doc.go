// Package mysql is the MySQL and MariaDB implementation of package sink, on
// github.com/go-sql-driver/mysql through database/sql.
//
// It passes the same conformance suite (sink/sinktest) as the Postgres sink, with no case
// switched off, and keeps the same guarantees: a call's writes commit in one transaction or
// not at all, every write is safe to repeat, transient failures (deadlock 1213, lock wait
// timeout 1205, a lost connection 2006/2013) are retried with the configured backoff, and
// table and column names are quoted identifiers while every value is a parameter.
//
// Transactions run at READ COMMITTED, set per transaction. Times are stored as DATETIME(6)
// in UTC, so they keep microseconds, the precision every sink stores (sink.Precision).
//
// Migrate creates and upgrades the tables. MySQL's DDL commits implicitly, so a migration is
// serialized by a named server lock (GET_LOCK) instead of a transaction, and every step is
// safe to run again.
//
// Effects is the effect sink: a marker (operation ID, payload hash) committed with each
// operation's effect, as postgres.Effects does, on a marker table keyed by a VARBINARY(255)
// ID. Its statements are multi-row; with the driver's default of server-side prepared
// statements each costs a prepare and a close besides its execution, which
// interpolateParams=true in the DSN saves.
package mysql
