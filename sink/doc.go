// Package sink defines what a windowed Kafka processor writes through, independently of the
// database: the close of a source partition's windows, last-write-wins state, and the
// progress a restart reads back. Implementations live in subpackages ([postgres] on pgx v5);
// package sinktest holds the conformance suite every implementation runs and an in-memory
// implementation for the unit tests of other packages.
//
// # Close batches
//
// A [CloseBatch] carries, for one (topic, partition), the partials of the windows the
// partition closed (serialized window.Stats, one per window key) and the partition's new
// closed_through. An implementation writes it atomically: partials keyed by (window_start,
// dimension, dimension_id, topic, partition), the merged rows of the keys it touches
// recomputed from every stored partial of those keys, and closed_through, all in one
// transaction. Writing the same batch again changes nothing: every write replaces, none
// adds. A partial rewritten by its partition replaces that partition's previous partial.
//
// # Merged rows
//
// A merged row ([Aggregate]) is a pure function of the partials stored for its key: count,
// min and max exact, mean = sum / count, and the configured quantile (P90 by default) from
// window.Merge of the partials in (topic, partition) order ([Merge], [CompareSources]), so
// every writer, in any order, at any concurrency, computes identical numbers. Optional
// attributes carried by the key (the seed's operator) take the first value found in that
// order and otherwise keep the stored one: COALESCE(new, stored).
//
// # Complete and filling rows
//
// A merged row is complete when every known partition of every topic that contributed a
// partial to it has closed_through >= the row's window end: no partition can still add to
// it. Until then it is filling. [Reader] reports it per row ([Aggregate.Complete]) and as a
// time ([Reader.CompleteThrough]). A partition is known once it wrote a batch, so a
// processor registers each partition it is assigned with a batch without partials.
//
// # Last-write-wins state
//
// [StateWriter.UpsertLatest] writes rows of a table described by a [StateSpec] (key
// columns, observed-at column, value columns). A batch is first collapsed to the newest row
// per key ([PrepareLatest], the seed's latest_by_key), and a stored row is replaced only by
// a row that is not older: observed_at >= stored observed_at.
//
// # Failures
//
// A nil error means the write is durable. Any error means it may not be, and a processor
// must not commit offsets that depend on it. Misuse wraps [ErrInvalid] and writes nothing.
// Implementations retry transient failures with a bounded backoff ([RetryPolicy]) that
// honours the context, and report the rest as a [*WriteError] saying whether the last
// failure was transient ([IsTransient]).
//
// # Effects
//
// Effects that are not naturally idempotent (a balance credit) are applied once per
// [Operation] ID by an effect sink that commits a marker (ID, payload hash) with the effect;
// see [Outcome], [ConflictError], [ErrNoEffect] and [ErrHorizon], and postgres.Effects.
//
// [postgres]: https://pkg.go.dev/github.com/streamledger/streamledger/sink/postgres
package sink
