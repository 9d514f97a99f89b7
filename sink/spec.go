package sink

import (
	"fmt"
	"math"
	"strings"

	"github.com/streamledger/streamledger/window"
)

// DefaultQuantile is the quantile a merged row carries when [AggregateSpec.Quantile] is zero:
// the P90 of the design.
const DefaultQuantile = 0.9

// AggregateColumns names the columns of the merged table. An empty field takes the default
// shown in brackets. The OV example maps Count to event_count, Mean to mean_delay_s,
// Quantile to p90_delay_s, Max to max_delay_s and Min to min_delay_s.
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
	// Attributes names the optional text attributes a key carries (an operator, for example).
	// Each is a column of the merged table, merged as COALESCE(new, stored).
	Attributes []string
	// Quantile is the quantile the merged row carries, in (0, 1] [DefaultQuantile].
	Quantile float64
	// QuantileMethod is its definition [window.Linear]: window.Linear equals PostgreSQL's
	// percentile_cont and window.NearestRank its percentile_disc on the same values, for
	// every key whose values are held exactly (see ExactLimit). Linear is the default so
	// that a table whose spec names no method keeps the definition of the rows it stores.
	QuantileMethod window.QuantileMethod
	// ExactLimit is the exact limit with which partials are merged: a key of at most this
	// many values in all has the exact quantile, a busier one a t-digest estimate (see
	// package window for its error bound). Zero means window.DefaultExactLimit (256),
	// negative means none, and above window.MaxExactLimit is invalid. The processors
	// writing the partials must build them with the same limit (window.Config.ExactLimit),
	// or a key above theirs and within this one is estimated.
	ExactLimit int
}

// WithDefaults returns s with every empty field set to its default.
func (s AggregateSpec) WithDefaults() AggregateSpec {
	def := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	def(&s.Table, "window_aggregates")
	c := &s.Columns
	def(&c.WindowStart, "window_start")
	def(&c.WindowEnd, "window_end")
	def(&c.Dimension, "dimension")
	def(&c.DimensionID, "dimension_id")
	def(&c.Count, "event_count")
	def(&c.Mean, "mean_value")
	def(&c.Quantile, "quantile_value")
	def(&c.Max, "max_value")
	def(&c.Min, "min_value")
	def(&c.ComputedAt, "computed_at")
	if s.Quantile == 0 {
		s.Quantile = DefaultQuantile
	}
	return s
}

// ColumnNames returns the merged table's columns in table order: window start, window end,
// dimension, dimension id, the attributes, count, mean, quantile, max, min, computed at.
// Call it on a spec with defaults applied.
func (s AggregateSpec) ColumnNames() []string {
	c := s.Columns
	out := []string{c.WindowStart, c.WindowEnd, c.Dimension, c.DimensionID}
	out = append(out, s.Attributes...)
	return append(out, c.Count, c.Mean, c.Quantile, c.Max, c.Min, c.ComputedAt)
}

// Validate reports whether s, after [AggregateSpec.WithDefaults], is usable: a quantile in
// (0, 1], a known quantile method, an exact limit within window.MaxExactLimit and distinct,
// non-empty column names. Errors name the field.
func (s AggregateSpec) Validate() error {
	s = s.WithDefaults()
	if math.IsNaN(s.Quantile) || s.Quantile <= 0 || s.Quantile > 1 {
		return fmt.Errorf("%w: AggregateSpec.Quantile must be in (0, 1], found %v", ErrInvalid, s.Quantile)
	}
	if !s.QuantileMethod.Valid() {
		return fmt.Errorf("%w: AggregateSpec.QuantileMethod: unknown method %v, want window.Linear or window.NearestRank",
			ErrInvalid, s.QuantileMethod)
	}
	if s.ExactLimit > window.MaxExactLimit {
		return fmt.Errorf("%w: AggregateSpec.ExactLimit is %d, want at most window.MaxExactLimit (%d), zero for the default %d, or negative for none",
			ErrInvalid, s.ExactLimit, window.MaxExactLimit, window.DefaultExactLimit)
	}
	return distinct("aggregate table "+s.Table, s.ColumnNames())
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
	if t.Valid() {
		return columnTypeNames[t]
	}
	return fmt.Sprintf("ColumnType(%d)", int(t))
}

// Valid reports whether t is one of the declared types, [Untyped] included.
func (t ColumnType) Valid() bool { return t >= Untyped && t <= Bytes }

// Column is one column of a state table. Type is its portable type, used when an
// implementation creates the table; leave it [Untyped] when the table is created elsewhere.
type Column struct {
	Name string
	Type ColumnType
}

// StateSpec describes one last-write-wins state table, such as a vehicle's latest position
// keyed by vehicle_id.
type StateSpec struct {
	Table      string
	Key        []Column // at least one
	ObservedAt Column   // the guard column: a row replaces the stored one only if not older
	Values     []Column
	// UpdatedAt, if set, names a column set to the writer's clock on every accepted write
	// (updated_at = now(), in effect). Its type is [Timestamp] when the table is created.
	UpdatedAt string
}

// ColumnNames returns the columns an upsert writes, in order: key, observed-at, values, and
// UpdatedAt when set.
func (s StateSpec) ColumnNames() []string {
	out := make([]string, 0, len(s.Key)+len(s.Values)+2)
	for _, c := range s.Key {
		out = append(out, c.Name)
	}
	out = append(out, s.ObservedAt.Name)
	for _, c := range s.Values {
		out = append(out, c.Name)
	}
	if s.UpdatedAt != "" {
		out = append(out, s.UpdatedAt)
	}
	return out
}

// Typed reports whether every column has a type, so the table can be created from the spec.
func (s StateSpec) Typed() bool {
	if s.ObservedAt.Type == Untyped {
		return false
	}
	for _, cs := range [][]Column{s.Key, s.Values} {
		for _, c := range cs {
			if c.Type == Untyped {
				return false
			}
		}
	}
	return true
}

// Validate reports whether s names a table, at least one key column, the observed-at column
// (of type [Timestamp] or untyped), distinct, non-empty column names and known column types.
func (s StateSpec) Validate() error {
	if s.Table == "" {
		return fmt.Errorf("%w: state spec without a table name", ErrInvalid)
	}
	if len(s.Key) == 0 {
		return fmt.Errorf("%w: state table %q needs at least one key column, found none", ErrInvalid, s.Table)
	}
	if s.ObservedAt.Name == "" {
		return fmt.Errorf("%w: state table %q needs an observed-at column", ErrInvalid, s.Table)
	}
	if t := s.ObservedAt.Type; t != Untyped && t != Timestamp {
		return fmt.Errorf("%w: state table %q: observed-at column %q has type %v, want sink.Timestamp", ErrInvalid, s.Table, s.ObservedAt.Name, t)
	}
	for _, cs := range [][]Column{s.Key, s.Values} {
		for _, c := range cs {
			if !c.Type.Valid() {
				return fmt.Errorf("%w: state table %q: column %q has unknown type %v", ErrInvalid, s.Table, c.Name, c.Type)
			}
		}
	}
	return distinct("state table "+s.Table, s.ColumnNames())
}

func distinct(what string, names []string) error {
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if strings.TrimSpace(n) == "" {
			return fmt.Errorf("%w: %s has an empty column name in %q", ErrInvalid, what, names)
		}
		if seen[n] {
			return fmt.Errorf("%w: %s names column %q twice", ErrInvalid, what, n)
		}
		seen[n] = true
	}
	return nil
}
