// Package mysql is the MySQL and MariaDB implementation of package sink, on
// github.com/go-sql-driver/mysql through database/sql: [Sink] implements [sink.Sink] and
// [sink.Reader].
//
// It passes the same conformance suite (sink/sinktest) as the Postgres sink, with no case
// switched off, and keeps the same guarantees: a call's writes commit in one transaction or
// not at all, every write is safe to repeat, transient failures (deadlock 1213, lock wait
// timeout 1205, a lost connection 2006/2013) are retried with the configured backoff, and
// table and column names are quoted identifiers while every value is a parameter.
//
// # Tables
//
// [Sink.Migrate] creates, in the database of the *sql.DB's connections, the same layout as
// the Postgres sink: the merged table keyed by (window_start, dimension, dimension_id); the
// partials table, one compact row per (window_start, topic, partition) of a window that is
// not complete, its keys' stats in one blob, compressed past a size; <merged>_folded, one row
// per complete window with every key's merged stats and the partitions merged into them;
// <merged>_topics, the topics that have written a partial; the progress table,
// closed_through per (topic, partition), NULL while a registered partition has closed
// nothing, and the empty mark; the locks table; the readiness view <merged>_status; and the
// state tables whose [sink.StateSpec] has column types ([sink.ColumnType]: text keys are
// VARCHAR(255), text values LONGTEXT, timestamps DATETIME(6)). Text columns use a binary
// collation without padding where the server has one (utf8mb4_0900_bin on MySQL 8,
// utf8mb4_nopad_bin on MariaDB), so keys are equal only when they are the same string, as in
// the other sinks.
//
// MySQL's DDL commits implicitly, so a migration is serialized by a named server lock
// (GET_LOCK, named for the database) instead of a transaction, every statement is safe to
// run again, and a version per object set is recorded in streamledger_migrations. The DSN
// must name the database: Migrate refuses a connection without one ([sink.ErrConfig]).
//
// # Close writes
//
// [Sink.WriteClose] runs one READ COMMITTED transaction per call. Its first statement locks
// the merged table's row of the locks table (SELECT ... FOR UPDATE), so the close writes of
// one table, from any number of processes, run one at a time. Every read follows in
// statements of its own, each of which sees what the calls before committed; the call is
// planned from them as in every sink of this module, and the plan is written with multi-row INSERT ... ON DUPLICATE
// KEY UPDATE statements, each chunked under the protocol's 65,535 placeholders and
// [Config.MaxStatementBytes]. Every assignment replaces (col = VALUES(col); attributes
// COALESCE(VALUES(a), a)); none adds.
//
// # State
//
// [Sink.UpsertLatest] collapses each table's rows to the newest per key, orders them the way
// every writer does, and sends them as multi-row upserts whose every assignment is guarded
// by VALUES(observed_at) >= observed_at. MySQL applies a statement's rows one after another
// and each assignment sees the columns assigned before it, so observed_at is assigned last:
// every condition compares with the stored row's time.
//
// # Times
//
// Times are stored as DATETIME(6) in UTC, so they keep microseconds, the precision every
// sink stores (sink.Precision). They travel as UTC text and are read back whatever the DSN's
// parseTime and loc say, so the sink needs no particular DSN parameters.
//
// # Effects
//
// [Effects] is the effect sink: a marker (operation ID, payload hash) committed with each
// operation's effect, as postgres.Effects does, on a marker table keyed by a VARBINARY(255)
// ID. Its statements are multi-row; with the driver's default of server-side prepared
// statements each costs a prepare and a close besides its execution, which
// interpolateParams=true in the DSN saves.
package mysql
