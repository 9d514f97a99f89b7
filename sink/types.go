package sink

import (
	"time"

	"github.com/streamledger/streamledger/ledger"
)

// TopicPartition names one source partition. It is the ledger's type, so a consumer passes
// the partition it owns without conversion.
type TopicPartition = ledger.TopicPartition

// Key identifies one merged row: a window (by its start) and one value of one dimension,
// (window_start, dimension, dimension_id).
type Key struct {
	WindowStart time.Time
	Dimension   string
	DimensionID string
}

// Series is what one window key feeds: one value of one dimension, (dimension,
// dimension_id), whose merged rows the aggregates table holds one per window (each a [Key]),
// and the key's optional attributes.
type Series struct {
	Dimension   string
	DimensionID string
	// Attrs holds the key's optional attributes by name (see [Partial.Attrs]); a missing name
	// never erases a stored value.
	Attrs map[string]string
}

// Partial is what one source partition aggregated for one [Key] when its window closed.
type Partial struct {
	Key
	// WindowEnd is the exclusive end of the window; it must be after WindowStart and at or
	// before the batch's ClosedThrough.
	WindowEnd time.Time
	// Attrs holds the optional attributes carried by the key (a region, for example),
	// by attribute name. A missing name means "unknown here": it never erases a value that a
	// partial of the same key already stored.
	Attrs map[string]string
	// Stats is a serialized window.Stats (its MarshalBinary), holding at least one value.
	Stats []byte
}

// CloseBatch is what one source partition closed: the partials of its closed windows and its
// new closed_through. It is written atomically, with the other batches of the same
// [WindowWriter.WriteClose] call.
type CloseBatch struct {
	Source TopicPartition
	// ClosedThrough is the partition watermark the batch reflects: every partial of Source
	// that ends at or before it is in this batch or in an earlier one. Progress never goes
	// back: a smaller value than the stored one leaves the stored one in place. Zero means
	// the partition has no watermark yet: a batch with a zero ClosedThrough and no partials
	// registers Source, which then holds back every window it has not closed.
	ClosedThrough time.Time
	// Empty marks a partition that is caught up and has no watermark (it has seen no event
	// time): while it has closed nothing it holds back no window; a later batch with a
	// ClosedThrough clears the mark. An Empty batch carries neither a ClosedThrough nor
	// partials.
	Empty bool
	// Partials may be empty: a batch then only records progress (an idle partition's
	// advance, or the registration of a newly assigned partition). Two partials with the same
	// key are collapsed to the later one.
	Partials []Partial
}

// Summary holds the merged statistics of one key: count, min and max exact, Mean = sum /
// count, Quantile from window.Merge of the partials in (topic, partition) order, by the
// spec's quantile and method.
type Summary struct {
	Count    int64
	Mean     float64
	Quantile float64
	Max      float64
	Min      float64
}

// Aggregate is one merged row: written when its window is complete, from every partition's
// partial of its key (and, for attributes, the values stored before).
type Aggregate struct {
	Key
	WindowEnd time.Time
	// Attrs holds, per attribute, the first value found in (topic, partition) order among the
	// partials of the key, or the value stored before when none of them has one.
	Attrs map[string]string
	Summary
	// ComputedAt is the time of the last recomputation, from the implementation's clock.
	ComputedAt time.Time
	// Complete is set by readers: every partition that holds windows back (see the package
	// documentation) has closed_through >= WindowEnd. A row stops being complete when a
	// partition that could still add to it is registered, until that partition closes the
	// window.
	Complete bool
}

// StateRow is one row of a last-write-wins state table, such as a device's latest reading.
type StateRow struct {
	// Table names the state table the row belongs to: one of the sink's [StateSpec]s.
	Table string
	// Key holds the values of the spec's key columns, in order.
	Key []any
	// ObservedAt is the event time of the row. A row replaces the stored one only when it is
	// not older: the guard is observed_at >= the stored observed_at.
	ObservedAt time.Time
	// Values holds the values of the spec's value columns, in order.
	Values []any
}

// Precision is the precision at which every implementation stores and compares times:
// window bounds, closed_through, observed_at and the stamps of its clock. It is the finest
// that both PostgreSQL's timestamptz and MySQL's DATETIME(6) hold. Implementations truncate
// times to it ([AtPrecision]) before they store or compare them, so that two times that
// differ only below it are the same time in every implementation.
const Precision = time.Microsecond

// AtPrecision returns t in UTC, truncated to [Precision], without a monotonic reading: the
// time an implementation stores for t.
func AtPrecision(t time.Time) time.Time {
	return t.UTC().Truncate(Precision)
}
