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
// column names. field names s in the configuration ("Config.Aggregates"); errors wrap
// sink.ErrConfig and name the field.
func CheckAggregate(field string, s sink.AggregateSpec) error {
	s = WithDefaults(s)
	if math.IsNaN(s.Quantile) || s.Quantile <= 0 || s.Quantile > 1 {
		return fmt.Errorf("%w: %s.Quantile is %v, want a quantile in (0, 1], or zero for the default %v",
			sink.ErrConfig, field, s.Quantile, DefaultQuantile)
	}
	if !s.QuantileMethod.Valid() {
		return fmt.Errorf("%w: %s.QuantileMethod is %v, want window.Linear or window.NearestRank",
			sink.ErrConfig, field, s.QuantileMethod)
	}
	if s.ExactLimit > window.MaxExactLimit {
		return fmt.Errorf("%w: %s.ExactLimit is %d, want at most window.MaxExactLimit (%d), zero for the default %d, or negative for none",
			sink.ErrConfig, field, s.ExactLimit, window.MaxExactLimit, window.DefaultExactLimit)
	}
	return distinct(fmt.Sprintf("%s: aggregate table %q", field, s.Table), Columns(s))
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
// column types. field names s in the configuration ("Config.States[0]"); errors wrap
// sink.ErrConfig and name the field.
func CheckState(field string, s sink.StateSpec) error {
	if s.Table == "" {
		return fmt.Errorf("%w: %s.Table is empty, want the state table's name", sink.ErrConfig, field)
	}
	if len(s.Key) == 0 {
		return fmt.Errorf("%w: %s.Key: state table %q needs at least one key column, found none", sink.ErrConfig, field, s.Table)
	}
	if s.ObservedAt.Name == "" {
		return fmt.Errorf("%w: %s.ObservedAt: state table %q needs an observed-at column, found none", sink.ErrConfig, field, s.Table)
	}
	if t := s.ObservedAt.Type; t != sink.Untyped && t != sink.Timestamp {
		return fmt.Errorf("%w: %s.ObservedAt: column %q of state table %q has type %v, want sink.Timestamp",
			sink.ErrConfig, field, s.ObservedAt.Name, s.Table, t)
	}
	for _, cs := range [][]sink.Column{s.Key, s.Values} {
		for _, c := range cs {
			if !validType(c.Type) {
				return fmt.Errorf("%w: %s: column %q of state table %q has type %v, want a sink.ColumnType",
					sink.ErrConfig, field, c.Name, s.Table, c.Type)
			}
		}
	}
	return distinct(fmt.Sprintf("%s: state table %q", field, s.Table), StateColumns(s))
}

// validType reports whether t is one of the declared column types, sink.Untyped included.
func validType(t sink.ColumnType) bool { return t >= sink.Untyped && t <= sink.Bytes }

func distinct(what string, names []string) error {
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if strings.TrimSpace(n) == "" {
			return fmt.Errorf("%w: %s has an empty column name in %q", sink.ErrConfig, what, names)
		}
		if seen[n] {
			return fmt.Errorf("%w: %s names column %q twice", sink.ErrConfig, what, n)
		}
		seen[n] = true
	}
	return nil
}
