// Package ledger decides which Kafka offset a consumer may commit: never past a message that is
// not yet durable.
//
// A Kafka commit is a single offset per partition and means "everything before this is done".
// A windowed consumer finishes messages out of order: a message is done when the window it
// belongs to has been written, which can be minutes after it was read, while the message after
// it may be done at once. The ledger records each consumed message with the condition that makes
// it durable and commits one past the longest durable prefix, so that a crash redelivers every
// message whose effect was not yet written, and whole windows are rebuilt, never fragments.
//
// # Conditions
//
// Each entry carries a [Condition]; the zero Condition is durable at once:
//
//   - [Window](end): durable once the partition's closed_through reaches end, i.e. the window
//     was closed and written together with its progress ([Partition.CloseThrough]);
//   - [Flush](seq): durable once the state flush with sequence seq committed ([Partition.Flushed]);
//   - [Ack](): durable once [Partition.Ack] is called for its offset, e.g. a dead letter's
//     positive delivery report, or a service's own asynchronous work;
//   - any combination, with [Condition.And].
//
// # Guarantees
//
//   - [Partition.Committable] never returns an offset past an entry that is not durable.
//     Offsets may have gaps (compacted topics, transaction markers).
//   - Memory grows with runs, not messages: consecutive entries with the same condition share one
//     run. An in-order stream over ten windows holds ten runs, whatever its length. Entries that
//     wait for an ack also keep one bit each until released.
//   - Misuse (offsets going back, an ack for an offset never added, progress going back) is an
//     error wrapping one of the Err values, never a panic, and changes nothing.
//   - The package imports the standard library only, so a service can embed it alone.
//
// # Watermarks and commit metadata
//
// After a restart a windowed consumer must resume with the watermark it had at the committed
// offset, or replayed messages would be judged late or on time differently than the first time.
// [Partition.SetWatermark] reports the watermark as messages are added; the ledger keeps the
// watermark as of the start of each run, and [Tracker.Commits] returns each partition's offset
// with metadata ([EncodeMetadata]) holding the watermark as of that offset. [DecodeMetadata]
// reads it back, defensively: empty metadata is [ErrNoMetadata], anything unreadable wraps
// [ErrBadMetadata], and the caller then restores from the sink's closed_through alone.
//
// # Concurrency
//
// A [Partition] and a [Tracker] belong to the loop that consumes the partitions and are not safe
// for concurrent use. Work finished on other goroutines reports back to that loop (a channel of
// acks), or the caller serializes calls with a mutex.
package ledger
