// Package sink defines what a windowed Kafka consumer (package ledger/consumer) writes
// through, independently of the database: the close of a source partition's windows, last-write-wins state, and the
// progress a restart reads back. Implementations live in subpackages ([postgres] on pgx v5,
// [mysql] on go-sql-driver/mysql for MySQL and MariaDB); package sinktest holds the conformance suite every implementation runs and an in-memory
// implementation for the unit tests of other packages.
//
// # Close batches
//
// A [CloseBatch] carries, for one (topic, partition), the partials of the windows the
// partition closed (serialized window.Stats, one per window key) and the partition's new
// closed_through. [WindowWriter.WriteClose] writes the batches of one call atomically: a
// consumer passes every owned partition's batch of a tick in one call. A batch with a zero
// ClosedThrough and no partials registers its partition; one with Empty set marks a
// partition that is caught up without a watermark. Writing the same batch again changes
// nothing: every write replaces, none adds.
//
// # Complete windows and merged rows
//
// A partition holds windows back when it is registered, its topic contributes (some
// partition of the topic wrote a partial to the table) and it is not marked empty while it
// has closed nothing. A window is complete once every holding partition has closed_through
// at or after its end; a registered partition that has closed nothing holds every window
// back, and a topic that never wrote a partial holds nothing back.
//
// A merged row ([Aggregate]) is written when its window is complete, once: count, min and
// max exact, mean = sum / count, and the configured quantile (P90 by default) from
// window.Merge of every partition's partial of the key in (topic, partition) order (each
// decoded with the spec's exact limit), so the numbers do not depend on
// the order or concurrency of the writes. The quantile follows the spec's definition
// ([AggregateSpec.QuantileMethod]): for a key of at most [AggregateSpec.ExactLimit] values in
// all it equals SQL's percentile_cont (window.Linear, the default) or percentile_disc
// (window.NearestRank) of those values; above it, it is a t-digest estimate within the rank
// error package window states. Optional attributes carried by the key (a device's region,
// say) take the first value found in that order and otherwise keep the stored one:
// COALESCE(new, stored).
// Until its window is complete a partition's partials are stored, and a later batch of the
// same window and partition replaces the keys it carries.
//
// A partition registered after its window was written (a partition added to a topic, or a
// topic that starts contributing) is merged into the stored rows when it closes the window:
// an implementation keeps each complete window's merged stats for a horizon for that.
// Merged rows then equal window.Merge of the kept stats and the new partials, the same
// counts, sums, minima and maxima; the quantile of a digest may differ from a merge of all
// partials at once. A partial from a partition already merged into its window is a replay
// and is ignored. Past the horizon a window's merged rows are final: partials of it are
// ignored, so the horizon must cover how far back the sources can redeliver ([ErrHorizon]).
//
// # Readiness
//
// [Reader] reports per row whether it is complete ([Aggregate.Complete]): a partition
// registered after the row was written makes it incomplete again until it closes the
// window. [Reader.CompleteThrough] gives the bound as a time.
//
// # Last-write-wins state
//
// [StateWriter.UpsertLatest] writes rows, each into the table it names ([StateRow.Table]),
// described by a [StateSpec] (key columns, observed-at column, value columns); the rows of
// one call are written together. The rows of each table are first collapsed to the newest
// row per key, and a stored row is replaced only by a row that is not
// older: observed_at >= stored observed_at.
//
// A state table's columns have portable types ([ColumnType]) that each implementation maps
// to its own SQL types when it creates the table; an untyped spec names a table created
// elsewhere.
//
// # Time precision
//
// Every implementation stores and compares times at [Precision] (a microsecond) in UTC:
// window bounds, closed_through, observed_at and its clock's stamps. Times finer than that
// are truncated ([AtPrecision]) before they are compared, so that two rows of a key whose
// observed-at times differ only below it are a tie, resolved the same way everywhere (the
// later row of a call wins).
//
// # Failures
//
// A nil error means the write is durable. Any error means it may not be, and a consumer
// must not commit offsets that depend on it. Bad input wraps [ErrInvalid] and writes
// nothing; a configuration mistake wraps [ErrConfig] and is refused by the constructor.
// Implementations retry transient failures with a bounded backoff ([RetryPolicy]) that
// honours the context, and report the rest as a [*WriteError] saying whether the last
// failure was transient ([IsTransient]).
//
// # Metrics
//
// An implementation reports each WriteClose and UpsertLatest call to the hooks it was
// configured with ([Hook]: [HookWriteClose], [HookUpsertLatest]), with what the call wrote,
// its attempts and its duration. The interfaces are small and found by type assertion, so
// no metrics library is imported; the Prometheus adapter in ledger/consumer/prom implements
// them.
//
// # Effects
//
// Effects that are not naturally idempotent (a balance credit) are applied once per
// [Operation] ID by an effect sink that commits a marker (ID, payload hash) with the effect,
// in batches with one [Result] per operation; see [Outcome], [ConflictError], [ErrNoEffect]
// and [ErrHorizon], and postgres.Effects and mysql.Effects.
//
// # Writing a sink
//
// A sink of one's own implements [Sink]: [WindowWriter], [StateWriter] and
// [ProgressReader], one method each. [Reader] serves dashboards and the conformance suite.
// Two optional interfaces, found by type assertion, let a consumer do more:
// [GatedWindowWriter] overlaps a tick's close with its state flushes (its gate runs under the
// close's locks; the method says what it may do), and [TableDescriber] declares the tables,
// so that the consumer builds its windows with the exact limit the sink decodes with and
// refuses rows and attributes the tables do not have before they reach a write. A sink that
// wraps another keeps these only if it implements them too.
//
// The contract is the rest of this documentation; in short:
//
//   - Idempotent: every write replaces, none adds. A consumer writes again whatever it cannot
//     prove durable, after a failed call, a crash or a rebalance, so the same batch or rows
//     written twice, or by two writers at once, must leave what one write leaves.
//   - Independent of order: merged rows are window.Merge of the partials in (topic,
//     partition) order whatever order the calls came in, a stored closed_through never goes
//     back, and a state row never replaces a newer one.
//   - Atomic: a call's batches, or its rows, are durable together or not at all, and a nil
//     error means they are. Misuse wraps [ErrInvalid] and writes nothing; another failure is
//     retried, within the context and the sink's own bounds, then returned as a [*WriteError]
//     whose Transient field ([IsTransient]) says whether a later attempt may succeed.
//   - Safe for concurrent use, when the consumer's WriteConcurrency is above 1, as it is by
//     default.
//   - Times compared at [Precision].
//
// It is proven by sinktest.Run: the conformance suite that sink/postgres, sink/mysql and
// sinktest.Memory pass, run from the sink's own tests with a factory that builds an empty sink
// per test (see package sinktest and the Example). sinktest.Memory is the reference: it plans
// its writes as the SQL sinks do, and a sink built around it passes the suite.
//
// [postgres]: https://pkg.go.dev/github.com/streamledger/streamledger/sink/postgres
// [mysql]: https://pkg.go.dev/github.com/streamledger/streamledger/sink/mysql
package sink
