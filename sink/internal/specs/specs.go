// Package specs resolves and checks the table specs of a sink (sink.AggregateSpec,
// sink.StateSpec): the defaults of their zero fields, their columns in table order, and the
// one validation every sink's constructor runs, whose errors wrap sink.ErrConfig and name the
// field.
package specs

import (
	"fmt"
	"math"
	"strings"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/window"
)

// DefaultQuantile is the quantile of an aggregate spec whose Quantile is zero.
const DefaultQuantile = 0.9

// WithDefaults returns s with every empty field set to its default.
func WithDefaults(s sink.AggregateSpec) sink.AggregateSpec {
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

// Columns returns the merged table's columns in table order: window start, window end,
// dimension, dimension id, the attributes, count, mean, quantile, max, min, computed at.
// Call it on a spec with defaults applied.
func Columns(s sink.AggregateSpec) []string {
	c := s.Columns
	out := []string{c.WindowStart, c.WindowEnd, c.Dimension, c.DimensionID}
	out = append(out, s.Attributes...)
	return append(out, c.Count, c.Mean, c.Quantile, c.Max, c.Min, c.ComputedAt)
}

// CheckAggregate reports whether s, after [WithDefaults], is usable: a quantile in (0, 1], a
// known quantile method, an exact limit within window.MaxExactLimit and distinct, non-empty
// column names. Errors wrap sink.ErrInvalid and name the field.
func CheckAggregate(s sink.AggregateSpec) error {
	s = WithDefaults(s)
	if math.IsNaN(s.Quantile) || s.Quantile <= 0 || s.Quantile > 1 {
		return fmt.Errorf("%w: AggregateSpec.Quantile must be in (0, 1], found %v", sink.ErrInvalid, s.Quantile)
	}
	if !s.QuantileMethod.Valid() {
		return fmt.Errorf("%w: AggregateSpec.QuantileMethod: unknown method %v, want window.Linear or window.NearestRank",
			sink.ErrInvalid, s.QuantileMethod)
	}
	if s.ExactLimit > window.MaxExactLimit {
		return fmt.Errorf("%w: AggregateSpec.ExactLimit is %d, want at most window.MaxExactLimit (%d), zero for the default %d, or negative for none",
			sink.ErrInvalid, s.ExactLimit, window.MaxExactLimit, window.DefaultExactLimit)
	}
	return distinct("aggregate table "+s.Table, Columns(s))
}

// StateColumns returns the columns an upsert writes, in order: key, observed-at, values, and
// UpdatedAt when set.
func StateColumns(s sink.StateSpec) []string {
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
func Typed(s sink.StateSpec) bool {
	if s.ObservedAt.Type == sink.Untyped {
		return false
	}
	for _, cs := range [][]sink.Column{s.Key, s.Values} {
		for _, c := range cs {
			if c.Type == sink.Untyped {
				return false
			}
		}
	}
	return true
}

// CheckState reports whether s names a table, at least one key column, the observed-at
// column (of type sink.Timestamp or untyped), distinct, non-empty column names and known
// column types.
func CheckState(s sink.StateSpec) error {
	if s.Table == "" {
		return fmt.Errorf("%w: state spec without a table name", sink.ErrInvalid)
	}
	if len(s.Key) == 0 {
		return fmt.Errorf("%w: state table %q needs at least one key column, found none", sink.ErrInvalid, s.Table)
	}
	if s.ObservedAt.Name == "" {
		return fmt.Errorf("%w: state table %q needs an observed-at column", sink.ErrInvalid, s.Table)
	}
	if t := s.ObservedAt.Type; t != sink.Untyped && t != sink.Timestamp {
		return fmt.Errorf("%w: state table %q: observed-at column %q has type %v, want sink.Timestamp", sink.ErrInvalid, s.Table, s.ObservedAt.Name, t)
	}
	for _, cs := range [][]sink.Column{s.Key, s.Values} {
		for _, c := range cs {
			if !validType(c.Type) {
				return fmt.Errorf("%w: state table %q: column %q has unknown type %v", sink.ErrInvalid, s.Table, c.Name, c.Type)
			}
		}
	}
	return distinct("state table "+s.Table, StateColumns(s))
}

// validType reports whether t is one of the declared column types, sink.Untyped included.
func validType(t sink.ColumnType) bool { return t >= sink.Untyped && t <= sink.Bytes }

func distinct(what string, names []string) error {
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if strings.TrimSpace(n) == "" {
			return fmt.Errorf("%w: %s has an empty column name in %q", sink.ErrInvalid, what, names)
		}
		if seen[n] {
			return fmt.Errorf("%w: %s names column %q twice", sink.ErrInvalid, what, n)
		}
		seen[n] = true
	}
	return nil
}
