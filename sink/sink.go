package sink

import (
	"context"
	"time"
)

// WindowWriter writes the closes of source partitions.
type WindowWriter interface {
	// WriteClose writes batches atomically: every batch's partials, the merged rows of the
	// windows the call completes and every batch's progress commit together or not at all.
	// A processor passes the closes of all its partitions of one tick in one call. Each
	// source may appear in at most one batch of a call. A nil error means every batch is
	// durable; any error means none may be, and the caller must not commit offsets that
	// depend on them.
	WriteClose(ctx context.Context, batches ...CloseBatch) error
}

// GatedWindowWriter is a [WindowWriter] that can make a write and commit it only once a gate
// allows. A processor uses it to make a tick's close beside the tick's state flush and commit
// it after the flush: a message whose window is written is late on a replay, so its state
// rows must be durable before its window is.
type GatedWindowWriter interface {
	// WriteCloseGated writes batches as WriteClose does, and calls gate right before it
	// commits (before each commit, when it retries): the write commits only if gate returns
	// nil. Otherwise nothing of the call is durable, the call is not retried, and its error
	// wraps gate's. Gate may block; it is called with the call's context.
	WriteCloseGated(ctx context.Context, gate func(context.Context) error, batches ...CloseBatch) error
}

// StateWriter writes last-write-wins state.
type StateWriter interface {
	// UpsertLatest writes rows, each into the state table it names, all of them together or
	// none. The rows of a table are first collapsed to the newest row per key (ties: the
	// later row in rows), and a stored row is replaced only by a row whose ObservedAt is not
	// older. A nil error means every row is durable.
	UpsertLatest(ctx context.Context, rows []StateRow) error
}

// ProgressReader reads what a restart needs.
type ProgressReader interface {
	// ClosedThrough returns the stored closed_through of each partition in tps that has one.
	// A partition missing from the map has closed nothing: it never wrote a batch, or only
	// registered or was marked empty.
	ClosedThrough(ctx context.Context, tps ...TopicPartition) (map[TopicPartition]time.Time, error)
}

// Sink is what a processor writes through.
type Sink interface {
	WindowWriter
	StateWriter
	ProgressReader
}

// TableDescriber is a sink that declares the tables it writes. A consumer that writes
// through one agrees with it before the first write instead of failing at every write: it
// builds its windows with the aggregate spec's [AggregateSpec.ExactLimit], so that the
// partials it closes are decoded with the limit they were built with; it dead-letters an
// event whose state rows name a table the sink does not declare, or whose keys and values
// do not match the declared columns in number; and it stops with an error when a window key maps to an
// attribute the aggregate spec does not declare. A sink that does not implement it gets none
// of these checks: its mistakes surface as failed writes, retried until they succeed.
type TableDescriber interface {
	// Tables returns the specs of the tables the sink writes, with the defaults the sink
	// applies filled in. The result does not change over the sink's life and the caller may
	// keep it.
	Tables() (AggregateSpec, []StateSpec)
}

// Reader reads back what a [Sink] stored. Dashboards and tests use it; a processor does not
// need it.
type Reader interface {
	// Aggregate returns the merged row of k, with [Aggregate.Complete] set.
	Aggregate(ctx context.Context, k Key) (Aggregate, bool, error)
	// Aggregates returns the merged rows of the window starting at windowStart, ordered by
	// (dimension, dimension_id), with [Aggregate.Complete] set.
	Aggregates(ctx context.Context, windowStart time.Time) ([]Aggregate, error)
	// Latest returns the stored row of a state table for the given key values.
	Latest(ctx context.Context, table string, key ...any) (StateRow, bool, error)
	// CompleteThrough returns the minimum closed_through over the partitions of the given
	// topics that hold windows back (registered, and not marked empty while they have
	// closed nothing): a window of these topics is complete when it ends at or before it. It
	// is the zero time when one of them has closed nothing, and ok is false when none holds
	// anything back.
	CompleteThrough(ctx context.Context, topics ...string) (t time.Time, ok bool, err error)
}
