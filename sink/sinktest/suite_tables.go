package sinktest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/specs"
	"github.com/streamledger/streamledger/window"
)

// testTables checks a sink.TableDescriber: it declares the tables of its setup, with the
// aggregate spec's defaults filled in and its quantile, method and exact limit as set, so
// that a consumer building its windows from the declaration builds them with the limit the
// sink decodes with.
func testTables(t *testing.T, f Factory, _ Features) {
	tests := []struct {
		name string
		edit func(*sink.AggregateSpec)
	}{
		{"defaults", func(a *sink.AggregateSpec) { a.Quantile = 0 }},
		{"set", func(a *sink.AggregateSpec) {
			a.Quantile, a.QuantileMethod, a.ExactLimit = 0.75, window.NearestRank, 1000
		}},
		{"no exact values", func(a *sink.AggregateSpec) { a.ExactLimit = -1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setup := defaultSetup()
			tt.edit(&setup.Aggregates)
			d, ok := f(t, setup).(sink.TableDescriber)
			if !ok {
				t.Skip("not a sink.TableDescriber")
			}
			agg, states := d.Tables()
			assert.Equal(t, specs.WithDefaults(setup.Aggregates), agg)
			assert.ElementsMatch(t, sinkfixture.States(), states)
			require.NotEmpty(t, states)
			states[0].Table = "changed by the caller"
			_, again := d.Tables()
			assert.ElementsMatch(t, sinkfixture.States(), again, "the caller may keep and change what Tables returns")
		})
	}
}
