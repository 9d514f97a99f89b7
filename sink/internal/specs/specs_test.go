package specs_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/specs"
	"github.com/streamledger/streamledger/window"
)

func TestChecks(t *testing.T) {
	d := specs.WithDefaults(sink.AggregateSpec{})
	assert.Equal(t, "window_aggregates", d.Table)
	assert.Equal(t, specs.DefaultQuantile, d.Quantile)
	assert.Equal(t, []string{"window_start", "window_end", "dimension", "dimension_id", "event_count", "mean_value", "quantile_value", "max_value", "min_value", "computed_at"}, specs.Columns(d))
	assert.NoError(t, specs.CheckAggregate("Config.Aggregates", d))
	assert.NoError(t, specs.CheckAggregate("Config.Aggregates", sink.AggregateSpec{}), "a zero quantile takes the default")
	assert.NoError(t, specs.CheckAggregate("Config.Aggregates", sink.AggregateSpec{QuantileMethod: window.NearestRank, ExactLimit: window.MaxExactLimit}))
	assert.NoError(t, specs.CheckAggregate("Config.Aggregates", sink.AggregateSpec{ExactLimit: -1}), "negative: no exact values")
	for name, tt := range map[string]struct {
		spec  sink.AggregateSpec
		field string
	}{
		"quantile > 1":         {sink.AggregateSpec{Quantile: 1.1}, "Config.Aggregates.Quantile"},
		"negative quantile":    {sink.AggregateSpec{Quantile: -0.5}, "Config.Aggregates.Quantile"},
		"unknown method":       {sink.AggregateSpec{QuantileMethod: 7}, "Config.Aggregates.QuantileMethod"},
		"exact limit too high": {sink.AggregateSpec{ExactLimit: window.MaxExactLimit + 1}, "Config.Aggregates.ExactLimit"},
		"attribute is column":  {sink.AggregateSpec{Attributes: []string{"event_count"}}, "event_count"},
		"blank attribute":      {sink.AggregateSpec{Attributes: []string{" "}}, "empty column name"},
		"two columns one name": {sink.AggregateSpec{Columns: sink.AggregateColumns{Min: "max_value"}}, "max_value"},
	} {
		err := specs.CheckAggregate("Config.Aggregates", tt.spec)
		assert.ErrorIs(t, err, sink.ErrConfig, name)
		assert.ErrorContains(t, err, tt.field, name)
	}
	st := sink.StateSpec{Table: "t", Key: []sink.Column{{Name: "k", Type: sink.Text}}, ObservedAt: sink.Column{Name: "at", Type: sink.Timestamp}, UpdatedAt: "u"}
	assert.NoError(t, specs.CheckState("Config.States[0]", st))
	assert.True(t, specs.Typed(st))
	assert.Equal(t, []string{"k", "at", "u"}, specs.StateColumns(st))
	st.Values = []sink.Column{{Name: "v"}}
	assert.False(t, specs.Typed(st))
	for name, bad := range map[string]sink.StateSpec{
		"no table":       {Key: st.Key, ObservedAt: st.ObservedAt},
		"no key":         {Table: "t", ObservedAt: st.ObservedAt},
		"no observed_at": {Table: "t", Key: st.Key},
		"duplicate":      {Table: "t", Key: st.Key, ObservedAt: sink.Column{Name: "k"}},
	} {
		err := specs.CheckState("Config.States[3]", bad)
		assert.ErrorIs(t, err, sink.ErrConfig, name)
		assert.ErrorContains(t, err, "Config.States[3]", name)
	}
}
