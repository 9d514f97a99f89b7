// Package sinkfixture holds the fixtures of the sink tests: the tables, topic and clock of the
// conformance suite (sink/sinktest), serialized partials, and hooks that record what a sink
// reports. The suite, the sinks' own tests and the consumer's tests share them, so that their
// rows compare column for column.
package sinkfixture

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/window"
)

// The suite's table and topic names.
const (
	AggregatesTable = "aggregates"
	StateTable      = "latest"
	Topic           = "events"
)

// WindowSize is the size of the suite's windows.
const WindowSize = 5 * time.Minute

// Start returns the start of the first window the suite writes: windows of WindowSize from it.
func Start() time.Time { return time.Date(2026, 3, 2, 7, 0, 0, 0, time.UTC) }

// Now returns the suite's fixed clock reading.
func Now() time.Time { return time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC) }

// Aggregates is the suite's aggregates table: every column named, with owner as the key's
// optional attribute and the 0.9 quantile.
func Aggregates() sink.AggregateSpec {
	return sink.AggregateSpec{
		Table: AggregatesTable,
		Columns: sink.AggregateColumns{
			WindowStart: "window_start", WindowEnd: "window_end", Dimension: "dimension", DimensionID: "dimension_id",
			Count: "event_count", Mean: "mean_value", Quantile: "p90_value", Max: "max_value", Min: "min_value",
			ComputedAt: "computed_at",
		},
		Attributes: []string{"owner"},
		Quantile:   0.9,
	}
}

// Latest is the suite's last-write-wins table: one text key and three values of different
// types.
func Latest() sink.StateSpec {
	return sink.StateSpec{
		Table:      StateTable,
		Key:        []sink.Column{{Name: "entity_id", Type: sink.Text}},
		ObservedAt: sink.Column{Name: "observed_at", Type: sink.Timestamp},
		Values: []sink.Column{
			{Name: "label", Type: sink.Text},
			{Name: "value", Type: sink.Float64},
			{Name: "seq", Type: sink.Int64},
		},
		UpdatedAt: "updated_at",
	}
}

// States returns the suite's state tables: [Latest].
func States() []sink.StateSpec { return []sink.StateSpec{Latest()} }

// Stats serializes a window.Stats holding values, as a consumer's closed partial would.
func Stats(t testing.TB, values ...float64) []byte {
	t.Helper()
	return StatsWithLimit(t, 0, values...)
}

// StatsWithLimit is [Stats] for a consumer whose windows keep limit values exactly
// (window.Config.ExactLimit).
func StatsWithLimit(t testing.TB, limit int, values ...float64) []byte {
	t.Helper()
	s := window.NewStats()
	require.NoError(t, s.SetExactLimit(limit))
	for _, v := range values {
		require.NoError(t, s.Add(v))
	}
	b, err := s.MarshalBinary()
	require.NoError(t, err)
	return b
}

// KnownValues returns ten values whose count, mean and P90 (window's exact quantile, linear
// interpolation between closest ranks) are (10, 144.0, 300.0): the sorted values put ranks
// 8 and 9 (0-based; h = 0.9 * 9 = 8.1) both at 300, and the sum is 1440.
func KnownValues() []float64 { return []float64{60, 90, 300, 60, 90, 300, 60, 90, 300, 90} }
