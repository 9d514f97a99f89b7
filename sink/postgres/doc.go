// Package postgres implements [sink.Sink] and [sink.Reader] on Postgres with pgx v5, and
// [Effects], an effect sink that applies each operation once with a marker.
//
// # Tables
//
// [Sink.Migrate] creates, in [Config.Schema], idempotently and safely from several processes
// at once (one transaction under an advisory lock, a version per object set in
// streamledger_migrations):
//
//   - the merged table ([sink.AggregateSpec]: table and column names configurable), keyed
//     by (window_start, dimension, dimension_id);
//   - the partials table, one compact row per (window_start, topic, partition) of a window
//     that is not complete: window_end, keys, and entries, every key's dimension, id,
//     attributes and serialized window.Stats in one blob, compressed past a size (see below);
//   - <merged table>_folded, one row per complete window (window_start, window_end, keys,
//     entries): every key's merged stats and the partitions merged into them;
//   - <merged table>_topics, the topics that have written a partial: their registered
//     partitions hold windows back;
//   - the progress table, closed_through per (topic, partition), NULL while a registered
//     partition has closed nothing, and the empty mark;
//   - the readiness view <merged table>_status: the merged rows plus complete_through and
//     complete (see below);
//   - the state tables whose [sink.StateSpec] carries column types.
//
// Every name is a quoted identifier and every value a parameter; [Sink.Statements] lists
// every statement the sink generates.
//
// # Close writes
//
// [Sink.WriteClose] runs one READ COMMITTED transaction per call. Its first statement takes
// the transaction-scoped advisory lock of the merged table (a key hashed from the schema and
// the table's name), so the close writes of one table, from any number of processes, run
// one at a time; state upserts do not take it. Every read follows in statements of their
// own, whose snapshots are taken after the lock was granted: each call sees everything the
// calls before it committed, and plans from that which windows complete and the rows to
// write, as every sink of this module does. There is one lock and it is always taken first, so close writes cannot
// deadlock each other; progress rows, which writers of other merged tables sharing the
// progress table also update, are written in (topic, partition) order.
//
// A call reads the contributing topics and the progress of its topics and theirs (one round
// trip with the lock), then the compact rows of its own (window, partition) pairs and of
// every window that is complete after it, the folded rows of those windows, and which of its
// windows have merged rows (a second round trip), and writes the plan: the merged rows of
// windows folded for the first time with one COPY after a savepoint, streamed as they are
// merged, the next 8,192 merged while Postgres inserts the last (on a unique violation it
// rolls back to the savepoint and upserts), the merged rows of windows folded again with an
// upsert, the compact rows, the folded rows, the deletion of folded windows' compact rows,
// progress and topics. Upserts of more than 32,768 merged rows are sent as they are merged,
// that many to a round trip, and the rest with the last: the rows of a large window are never
// all in memory at once. Every upsert replaces (col = EXCLUDED.col; attributes
// COALESCE(EXCLUDED.a, stored)); no statement adds after DO UPDATE.
//
// With one consumer writing all its partitions per tick, a merged row is written once, and
// the partials of a window are stored only by the partitions that close it before the last
// one does, and deleted when it folds. Blobs of 512 bytes or more are compressed with zstd,
// whose entropy coding suits the stats' bytes, where Postgres's own TOAST compression (LZ
// only) finds little repetition to take.
//
// # Horizon
//
// Folded rows are kept for [Config.Horizon] after they were written (7 days unless set;
// negative keeps them forever), by the writer's clock, not the window's end, so that a replay
// of historical data keeps its windows: within it a partition registered later is merged into a
// written window. A close write prunes at most 64 of the oldest expired folded rows, at most
// once a minute per [Sink]; there is no background work. Past the horizon a window's merged
// rows are final and partials of it are ignored, so [New] refuses a horizon shorter than
// [Config.SourceRetention] ([sink.ErrHorizon]), as [NewEffects] does for markers.
//
// # Last-write-wins state
//
// [Sink.UpsertLatest] collapses a batch to the newest row per key, sends it in one order
// every writer uses (by a seedless FNV-1a hash of the key, then the key: concurrent writers
// lock rows in one order) and guards the update with
// WHERE EXCLUDED.observed_at >= table.observed_at. State tables that Migrate creates keep
// half of each page free (fillfactor 50): once a key is known every upsert of it is an
// update, which then stays on its page (HOT, no new index entry).
//
// # Strategies
//
// A batch of state rows reaches its upsert through COPY into a temporary table and one
// INSERT ... SELECT. COPY streams the rows through one reused buffer, so an upsert holds that
// buffer beside the rows however large its batch; an INSERT from unnest of one array per
// column, or one statement per row in a pipeline, would build its parameters whole in
// memory, several times the rows' size. What COPY costs is in the catalog: it creates and
// drops a temporary table per transaction, which leaves dead rows in the system catalogs
// for the server's vacuum to reclaim.
// Columns whose value is the same for a whole batch (write time, computed_at, updated_at)
// travel once, as scalar parameters.
//
// Both COPYs (merged rows, state rows) write Postgres's binary format straight from the
// rows' values when the table's columns have the types Migrate gives them and every value is
// one of: a string for text or varchar, an int32 for integer or bigint, an int64 or int for
// bigint, a float64 for double precision, a bool for boolean, a time.Time for timestamptz, a
// non-nil []byte for bytea, nil for NULL; the values are not boxed or looked up in pgx's type
// map one by one. Any other batch goes through pgx's CopyFrom, which converts whatever pgx
// can, and both write the same values. The column types are read from the server once per
// Sink, at its first COPY into the table: a table altered to other types needs a new Sink. A
// connection's pgx.CopyFromTracer sees both kinds of COPY.
//
// # Readiness
//
// A merged row is complete when window_end <= the minimum closed_through over the
// partitions that hold windows back: the registered partitions of the contributing topics,
// but those marked empty that have closed nothing (one that has closed nothing makes the
// minimum NULL: nothing is complete). Read it through [Sink.Aggregate], [Sink.Aggregates]
// and [Sink.CompleteThrough], or in SQL from the <merged table>_status view's complete
// column. Register each assigned partition with a close batch without partials, so that a
// partition that has not closed anything yet holds windows back.
//
// # Time
//
// computed_at, written_at, folded_at and updated_at come from [Config.Clock] (time.Now by
// default), sent as parameters, never from the server's now(): with an injected clock every
// stored column is deterministic.
//
// # Failures
//
// Each write is retried per [Config.Retry] when it fails transiently (a lost
// connection, admin or crash shutdown, serialization failure, deadlock, lock timeout);
// backoff honours the context. A commit whose acknowledgement is lost is retried too, which
// is safe because every write replaces. Anything else is returned at once as a
// [*sink.WriteError] that is not transient. A nil error is returned only after COMMIT
// succeeded.
//
// # Metrics
//
// [Config.Hooks] receive every WriteClose and UpsertLatest call as sink.WriteCloseInfo and
// sink.UpsertLatestInfo: rows merged, compact, folded and ignored, progress rows, state
// rows, attempts and duration. A value that implements neither hook interface is refused
// by [New].
//
// # Effects
//
// [Effects.Apply] applies a batch of operations in one transaction, with one [sink.Result]
// per operation, as if they were applied one at a time in batch order. It inserts every
// operation's marker (operation ID, payload hash) with one INSERT ... ON CONFLICT DO NOTHING
// RETURNING, in the order of the IDs so that concurrent batches cannot deadlock on them; reads
// the markers that were there already with one SELECT; runs the caller's [Effect] once on the
// accepted operations, which applies them with set-based statements joined to their IDs and
// reports the ones it refuses or that touched no row; and deletes those operations' markers.
// Same ID and payload as a committed marker: [sink.Duplicate], no effect. Same ID, another
// payload: [sink.Conflict], no effect. Refused, or no row touched: [sink.Rejected], rolled
// back with its marker ([sink.ErrNoEffect]). A rejected or conflicting operation neither
// aborts nor holds back the others; an ID that occurs twice in a batch is decided in batch
// order. A statement that fails on an operation's data (SQLSTATE class 22 or 23) cannot say
// which operation: only then does Apply run the batch again with each effect under a
// savepoint of its own.
//
// A transient failure retries the whole batch. A commit whose acknowledgement was lost is
// recognised by the retry: the markers carry a random token of the call, and a transaction
// commits whole, so finding one of them means the earlier attempt committed, and its results
// are returned. Markers are kept for [EffectConfig.Horizon] and [Effects.Prune] deletes only
// older ones; [NewEffects] refuses a horizon shorter than the source's declared retention
// ([sink.ErrHorizon]). The guarantee holds within this database and while markers are
// retained.
package postgres
