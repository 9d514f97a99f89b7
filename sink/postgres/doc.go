// Package postgres implements [sink.Sink] and [sink.Reader] on Postgres with pgx v5, and
// [Effects], the effect sink of seed 004.
//
// # Tables
//
// [Sink.Migrate] creates, in [Config.Schema], idempotently and safely from several processes
// at once (one transaction under an advisory lock, a version per object set in
// streamledger_migrations):
//
//   - the merged table ([sink.AggregateSpec]: names configurable, the OV example's
//     delay_aggregates maps one to one), keyed by (window_start, dimension, dimension_id);
//   - the partials table, keyed by (window_start, dimension, dimension_id, topic, partition),
//     holding each partition's serialized window.Stats;
//   - the progress table, closed_through per (topic, partition);
//   - the readiness view <merged table>_status: the merged rows plus complete_through and
//     complete (see below);
//   - the state tables whose [sink.StateSpec] carries column types.
//
// Every name is a quoted identifier and every value a parameter; [Sink.Statements] lists
// every statement the sink generates.
//
// # Close batches
//
// [Sink.WriteClose] runs one READ COMMITTED transaction: it upserts the batch's partials,
// takes transaction-scoped advisory locks on the buckets of the batch's keys (hash of the key
// modulo [Config.LockBuckets]) in ascending order, then, in a statement of its own (so its
// snapshot follows the locks), reads back every stored partial of those keys, merges them
// in Go with window.Merge in (topic, partition) order, upserts the merged rows and raises
// closed_through with GREATEST, so that it never goes back. Writers of the same keys
// serialize on the buckets from the read to the commit, and commit in lock order, so the
// last one sees every partial committed before it and none skips another's; the fixed lock
// order rules out deadlocks between writers. Their partial inserts, which touch only their
// own partition's rows, run in parallel. Every upsert replaces (col = EXCLUDED.col;
// attributes COALESCE(EXCLUDED.a, stored)); no statement adds after DO UPDATE.
//
// With the default strategy a batch is first written as new, which every batch but a
// replay is. Its partials go in with a plain INSERT (no speculative insertion: no probe,
// token and confirmation record per row). The read under the locks says which keys other
// partitions have written: the merged rows of the others go in with a plain INSERT too, and
// those of the shared keys, which exist because their partials were written with them under
// the same locks, are rewritten with one UPDATE ... FROM unnest (replacing every column, as
// the upsert does, without its probe and row lock per row). A row that exists after all
// makes a plain INSERT fail, and a merged row that is missing makes the UPDATE count fall
// short; either way the transaction rolls back to a savepoint taken before its first write
// and takes the general path above, so the outcome is the same. The transaction plans its
// statements for the actual arrays (plan_cache_mode = force_custom_plan, set locally): a
// generic plan assumes ten elements per array. The read is bounded to the batch's window
// range and returns each stored partial with its key's position in the batch. While the
// server inserts the partials, takes the locks and reads (one round trip), the writer
// decodes and summarizes its own partials, which is already the merged row of every key it
// alone has written.
//
// The merged table keeps half of each page free (fillfactor 50): a merged row is inserted
// by the first partition that closes its window and rewritten by each other one, and the
// free space keeps those rewrites HOT (in place, no new index entry).
//
// # Last-write-wins state
//
// [Sink.UpsertLatest] collapses a batch to the newest row per key, sends it in one order
// every writer uses (by a seedless FNV-1a hash of the key, then the key: concurrent writers
// lock rows in one order) and guards the update with
// WHERE EXCLUDED.observed_at >= table.observed_at. State tables that Migrate creates keep
// half of each page free too (fillfactor 50, version 2 of their migration): once a key is
// known every upsert of it is an update, which then stays on its page (HOT). In
// BenchmarkUpsertLatest that took the unnest strategy from about 60k to about 84k rows/s in
// one session on this repository's 2-core machine.
//
// # Strategies
//
// A batch of rows reaches its upsert as INSERT ... SELECT FROM unnest of one array
// parameter per column, at most 8,192 rows per statement ([StrategyUnnest], the default),
// through COPY into a temporary table and one INSERT ... SELECT ([StrategyCopy]), or as one
// statement per row pipelined in a pgx.Batch ([StrategyBatch]). [StrategyRowByRow] is the
// naive baseline. The default was chosen by the benchmarks of this package (go test -bench .
// ./sink/postgres), which report rows/s for every strategy side by side: on the development
// machine (two shared cores, server included) unnest was the fastest for state upserts, and
// for close batches, with the new-batch path above (which only the default strategy takes),
// about one and a half times COPY and twelve times the row-by-row baseline: with batches of
// 2,000 partials and one writer, 58 to 72 thousand partial-plus-merged rows per second in
// quiet runs (42 to 44 thousand before that path), 39 to 64 thousand while other work shared
// the cores; two writers of the same keys, 66 to 99 thousand. On a faster machine in a later
// session COPY came out ahead for state upserts alone (156 to 199 thousand rows per second
// against 143 to 156 thousand, batches of 5,000 rows) while unnest stayed ahead for close
// batches (51.5 against 40.4 thousand); the OV end-to-end benchmark with COPY for its state
// tables was faster at 100x and slower at 10x, in single runs. Unnest also leaves the catalog
// alone, where COPY creates and drops a temporary table per transaction. Columns whose value
// is the same for a whole batch (source partition, write time, computed_at, updated_at)
// travel once, as scalar parameters.
//
// # Readiness
//
// A merged row is complete when window_end <= the minimum closed_through over every known
// partition of the topics that contributed a partial to it. Read it through [Sink.Aggregate],
// [Sink.Aggregates] and [Sink.CompleteThrough], or in SQL from the <merged table>_status
// view's complete column. Register each assigned partition with a close batch without
// partials, so that a partition that has not closed anything yet holds rows back.
//
// # Time
//
// computed_at, written_at and updated_at come from [Config.Clock] (time.Now by default),
// sent as parameters, never from the server's now(): with an injected clock every stored
// column is deterministic.
//
// # Failures
//
// Each write is retried per [Config.Retry] when it fails transiently ([IsTransient]: a lost
// connection, admin or crash shutdown, serialization failure, deadlock, lock timeout);
// backoff honours the context. A commit whose acknowledgement is lost is retried too, which
// is safe because every write replaces. Anything else is returned at once as a
// [*sink.WriteError] that is not transient. A nil error is returned only after COMMIT
// succeeded. [Hooks] inject faults at fixed points of an attempt for tests.
//
// # Effects
//
// [Effects.Apply] inserts the marker (operation ID, payload hash) with ON CONFLICT DO
// NOTHING RETURNING and runs the caller's [Effect] in the same transaction only if the marker
// was accepted. Same ID and payload again: [sink.Duplicate], no effect. Same ID, another
// payload: [*sink.ConflictError], no effect. An effect that fails or touches no row: rolled
// back, no marker ([sink.ErrNoEffect]). Markers are kept for [EffectConfig.Horizon] and
// [Effects.Prune] deletes only older ones; [NewEffects] refuses a horizon shorter than the
// source's declared retention ([sink.ErrHorizon]). The guarantee holds within this database
// and while markers are retained.
package postgres
