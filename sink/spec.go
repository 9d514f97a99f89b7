package sink

import (
	"fmt"

	"github.com/streamledger/streamledger/window"
)

// AggregateColumns names the columns of the merged table, so that the table can carry the
// names of what it measures (mean_latency_ms rather than mean_value, say). An empty field
// takes the default shown in brackets.
type AggregateColumns struct {
	WindowStart string // [window_start]
	WindowEnd   string // [window_end]
	Dimension   string // [dimension]
	DimensionID string // [dimension_id]
	Count       string // [event_count]
	Mean        string // [mean_value]
	Quantile    string // [quantile_value]
	Max         string // [max_value]
	Min         string // [min_value]
	ComputedAt  string // [computed_at]
}

// AggregateSpec describes the merged table a [WindowWriter] maintains.
type AggregateSpec struct {
	// Table is the merged table's name [window_aggregates].
	Table string
	// Columns names its columns.
	Columns AggregateColumns
	// Attributes names the optional text attributes a key carries (a region, for example).
	// Each is a column of the merged table, merged as COALESCE(new, stored).
	Attributes []string
	// Quantile is the quantile the merged row carries, in (0, 1]. Zero means 0.9 (the
	// default); a negative value is refused.
	Quantile float64
	// QuantileMethod is its definition [window.Linear]: window.Linear equals PostgreSQL's
	// percentile_cont and window.NearestRank its percentile_disc on the same values, for
	// every key whose values are held exactly (see ExactLimit). Linear is the default so
	// that a table whose spec names no method keeps the definition of the rows it stores.
	QuantileMethod window.QuantileMethod
	// ExactLimit is the exact limit with which partials are merged: a key of at most this
	// many values in all has the exact quantile, a busier one a t-digest estimate (see
	// package window for its error bound). Zero means 256 (window.DefaultExactLimit, the
	// default); negative means none: merged values are summarised by a t-digest from the
	// first; above window.MaxExactLimit is refused. The consumers writing the partials must
	// build them with the same limit (window.Config.ExactLimit), or a key above theirs and
	// within this one is estimated; a consumer does so by itself when its sink is a
	// [TableDescriber].
	ExactLimit int
}

// ColumnType is the portable type of a state table's column: each implementation maps it
// to its own SQL type when it creates the table (the Postgres sink to text, integer, bigint,
// double precision, boolean, timestamptz and bytea; the MySQL sink to VARCHAR or TEXT, INT,
// BIGINT, DOUBLE, BOOLEAN, DATETIME(6) and VARBINARY or BLOB). The zero value, [Untyped],
// says the table is created elsewhere. The Go values a row carries for a column are those of
// its type: string, int32 (or int), int64, float64, bool, time.Time and []byte.
type ColumnType int

const (
	Untyped   ColumnType = iota // the table is created elsewhere
	Text                        // a string
	Int32                       // a 32-bit integer
	Int64                       // a 64-bit integer
	Float64                     // a double-precision float
	Bool                        // a boolean
	Timestamp                   // an instant, stored at [Precision] in UTC
	Bytes                       // a byte string
)

var columnTypeNames = [...]string{"untyped", "text", "int32", "int64", "float64", "bool", "timestamp", "bytes"}

func (t ColumnType) String() string {
	if t.valid() {
		return columnTypeNames[t]
	}
	return fmt.Sprintf("ColumnType(%d)", int(t))
}

func (t ColumnType) valid() bool { return t >= Untyped && t <= Bytes }

// Column is one column of a state table. Type is its portable type, used when an
// implementation creates the table; leave it [Untyped] when the table is created elsewhere.
type Column struct {
	Name string
	Type ColumnType
}

// StateSpec describes one last-write-wins state table, such as a device's latest reading
// keyed by device_id.
type StateSpec struct {
	Table      string
	Key        []Column // at least one
	ObservedAt Column   // the guard column: a row replaces the stored one only if not older
	Values     []Column
	// UpdatedAt, if set, names a column set to the writer's clock on every accepted write
	// (updated_at = now(), in effect). Its type is [Timestamp] when the table is created.
	UpdatedAt string
}
