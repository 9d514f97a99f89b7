package sink

import (
	"context"
	"time"
)

// WindowWriter writes the closes of source partitions.
type WindowWriter interface {
	// WriteClose writes batches atomically: every batch's partials, the merged rows of the
	// windows the call completes and every batch's progress commit together or not at all.
	// A consumer passes the closes of all its partitions of one tick in one call. Each
	// source may appear in at most one batch of a call. A nil error means every batch is
	// durable; any error means none may be, and the caller must not commit offsets that
	// depend on them.
	WriteClose(ctx context.Context, batches ...CloseBatch) error
}

// GatedWindowWriter is a [WindowWriter] whose write waits, before it commits, for a gate the
// caller supplies. A consumer uses it to make a tick's close beside the tick's state flushes
// and commit it only after them: a message whose window is written is late on a replay, so
// its state rows must be durable before its window is. With a plain WindowWriter the close
// starts once the flushes are done, which is as correct and adds the close's time to every
// tick's writes.
//
// The gate runs inside the write's transaction, so the gated write holds its locks for as long
// as the gate takes; that is the price of overlapping the close with other writes without a
// two-phase commit. The method says what a gate may do.
type GatedWindowWriter interface {
	// WriteCloseGated writes batches as WriteClose does, and calls gate once the call's rows
	// are written and before they commit: once per attempt, so again before each retried
	// commit. The write commits only if gate returns nil; otherwise nothing of the call is
	// durable, the call is not retried, and its error wraps gate's. gate gets the call's ctx.
	// An implementation without a transaction to hold open (sinktest.Memory) calls gate
	// before it writes anything.
	//
	// While gate runs the write holds what its transaction holds: a database connection, the
	// lock that makes the close writes of the aggregates table run one at a time (in
	// sink/postgres an advisory lock, in sink/mysql the table's row of its locks table), and
	// the row locks of what it wrote. Every other close write of that table, from this process
	// or another, waits for gate; reads do not wait, and see the table as it was before the
	// call. So gate must end promptly and honour ctx. It may wait for writes that do not take
	// that lock: UpsertLatest and reads through the same sink, which take connections of their
	// own (the pool must have one free). It must not wait for a WriteClose or WriteCloseGated
	// of the same aggregates table, which waits for gate in turn until ctx ends. The
	// consumer's gate waits only for the same tick's state flushes, within the tick's write
	// deadline.
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

// Sink is what a consumer writes through.
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

// Reader reads back what a [Sink] stored. Dashboards and tests use it; a consumer does not
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
