package sink_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/window"
)

func stats(t testing.TB, values ...float64) []byte {
	t.Helper()
	s := window.NewStats()
	for _, v := range values {
		require.NoError(t, s.Add(v))
	}
	b, err := s.MarshalBinary()
	require.NoError(t, err)
	return b
}

var t0 = time.Date(2026, 3, 2, 7, 0, 0, 0, time.UTC)

func TestPrepareLatest(t *testing.T) {
	spec := func(table string) sink.StateSpec {
		return sink.StateSpec{Table: table, Key: []sink.Column{{Name: "entity_id"}}, ObservedAt: sink.Column{Name: "observed_at"}, Values: []sink.Column{{Name: "v"}}}
	}
	pair := spec("p")
	pair.Key = append(pair.Key, sink.Column{Name: "n"})
	specs := map[string]sink.StateSpec{"a": spec("a"), "b": spec("b"), "c": spec("c"), "p": pair}
	lookup := func(table string) (sink.StateSpec, bool) { sp, ok := specs[table]; return sp, ok }
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	row := func(table, key string, s int, v string) sink.StateRow {
		return sink.StateRow{Table: table, Key: []any{key}, ObservedAt: at(s), Values: []any{v}}
	}
	for _, tc := range []struct {
		name    string
		rows    []sink.StateRow
		want    [][]sink.StateRow
		invalid bool
	}{
		{"none", nil, nil, false},
		{"the newest row per key, a later row wins a tie", []sink.StateRow{
			row("a", "bus-1", 10, "x"), row("a", "bus-2", 5, "b"), row("a", "bus-1", 3, "stale"), row("a", "bus-1", 10, "tie, later wins"),
		}, [][]sink.StateRow{{row("a", "bus-1", 10, "tie, later wins"), row("a", "bus-2", 5, "b")}}, false},
		{"grouped by table, in table order; keys are per table", []sink.StateRow{
			row("b", "bus-1", 1, "b1"), row("a", "bus-1", 2, "a1"), row("b", "bus-1", 3, "b2"),
		}, [][]sink.StateRow{{row("a", "bus-1", 2, "a1")}, {row("b", "bus-1", 3, "b2")}}, false},
		{"three tables interleaved, each collapsed", []sink.StateRow{
			row("c", "k", 1, "c1"), row("a", "k", 1, "a1"), row("c", "j", 1, "c2"), row("b", "k", 1, "b1"),
			row("a", "k", 2, "a2"), row("c", "k", 2, "c3"),
		}, [][]sink.StateRow{{row("a", "k", 2, "a2")}, {row("b", "k", 1, "b1")}, {row("c", "k", 2, "c3"), row("c", "j", 1, "c2")}}, false},
		{"a key of one number is its own key, apart from a string of the same text", []sink.StateRow{
			{Table: "a", Key: []any{int64(1)}, ObservedAt: at(1), Values: []any{"n1"}},
			{Table: "a", Key: []any{"1"}, ObservedAt: at(1), Values: []any{"s1"}},
			{Table: "a", Key: []any{int64(1)}, ObservedAt: at(2), Values: []any{"n2"}},
		}, [][]sink.StateRow{{
			{Table: "a", Key: []any{int64(1)}, ObservedAt: at(2), Values: []any{"n2"}},
			{Table: "a", Key: []any{"1"}, ObservedAt: at(1), Values: []any{"s1"}},
		}}, false},
		{"composite keys collapse by every value", []sink.StateRow{
			{Table: "p", Key: []any{"bus", int64(1)}, ObservedAt: at(2), Values: []any{"x"}},
			{Table: "p", Key: []any{"bus", int64(2)}, ObservedAt: at(1), Values: []any{"y"}},
			{Table: "p", Key: []any{"bus", int64(1)}, ObservedAt: at(1), Values: []any{"stale"}},
		}, [][]sink.StateRow{{
			{Table: "p", Key: []any{"bus", int64(1)}, ObservedAt: at(2), Values: []any{"x"}},
			{Table: "p", Key: []any{"bus", int64(2)}, ObservedAt: at(1), Values: []any{"y"}},
		}}, false},
		{"an undeclared table", []sink.StateRow{row("a", "bus-1", 1, "x"), row("d", "bus-1", 1, "x")}, nil, true},
		{"a missing value", []sink.StateRow{{Table: "a", Key: []any{"k"}, ObservedAt: at(1)}}, nil, true},
		{"no observed-at time", []sink.StateRow{{Table: "a", Key: []any{"k"}, Values: []any{"v"}}}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := slices.Clone(tc.rows)
			got, err := sink.PrepareLatest(tc.rows, lookup)
			assert.Equal(t, before, tc.rows, "rows is not modified")
			if tc.invalid {
				require.ErrorIs(t, err, sink.ErrInvalid)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestDedupKey(t *testing.T) {
	k := func(vals ...any) any { v, _ := sink.DedupKey(nil, vals); return v }
	cet := time.FixedZone("CET", 3600)
	assert.Equal(t, k("a"), k("a"))
	assert.NotEqual(t, k("a"), k("b"))
	assert.NotEqual(t, k(int64(1)), k(int32(1)), "types are part of the key")
	assert.Equal(t, k(t0), k(t0.In(cet)), "times compare as instants")
	assert.Equal(t, k("a", 1), k("a", 1))
	assert.NotEqual(t, k("ab", "c"), k("a", "bc"), "tuples do not run together")
	assert.NotEqual(t, k([]byte("s1:x")), k("s1:x"), "an encoded tuple never equals a single string")
	assert.Equal(t, k([]byte{1, 2}), k([]byte{1, 2}), "byte slices are usable keys")
	assert.Equal(t, k("a", t0), k("a", t0.In(cet)))
}

func TestCompareSources(t *testing.T) {
	a := sink.TopicPartition{Topic: "a", Partition: 9}
	b := sink.TopicPartition{Topic: "b", Partition: 0}
	assert.Negative(t, sink.CompareSources(a, b))
	assert.Positive(t, sink.CompareSources(sink.TopicPartition{Topic: "a", Partition: 10}, a))
	assert.Zero(t, sink.CompareSources(a, a))
}

func TestSpecs(t *testing.T) {
	d := sink.AggregateSpec{}.WithDefaults()
	assert.Equal(t, "window_aggregates", d.Table)
	assert.Equal(t, sink.DefaultQuantile, d.Quantile)
	assert.Equal(t, []string{"window_start", "window_end", "dimension", "dimension_id", "event_count", "mean_value", "quantile_value", "max_value", "min_value", "computed_at"}, d.ColumnNames())
	assert.NoError(t, d.Validate())
	assert.NoError(t, sink.AggregateSpec{}.Validate(), "a zero quantile takes the default")
	assert.NoError(t, sink.AggregateSpec{QuantileMethod: window.NearestRank, ExactLimit: window.MaxExactLimit}.Validate())
	assert.NoError(t, sink.AggregateSpec{ExactLimit: -1}.Validate(), "negative: no exact values")
	for name, tt := range map[string]struct {
		spec  sink.AggregateSpec
		field string
	}{
		"quantile > 1":         {sink.AggregateSpec{Quantile: 1.1}, "AggregateSpec.Quantile"},
		"negative quantile":    {sink.AggregateSpec{Quantile: -0.5}, "AggregateSpec.Quantile"},
		"unknown method":       {sink.AggregateSpec{QuantileMethod: 7}, "AggregateSpec.QuantileMethod"},
		"exact limit too high": {sink.AggregateSpec{ExactLimit: window.MaxExactLimit + 1}, "AggregateSpec.ExactLimit"},
		"attribute is column":  {sink.AggregateSpec{Attributes: []string{"event_count"}}, "event_count"},
		"blank attribute":      {sink.AggregateSpec{Attributes: []string{" "}}, "empty column name"},
		"two columns one name": {sink.AggregateSpec{Columns: sink.AggregateColumns{Min: "max_value"}}, "max_value"},
	} {
		err := tt.spec.Validate()
		assert.ErrorIs(t, err, sink.ErrInvalid, name)
		assert.ErrorContains(t, err, tt.field, name)
	}
	st := sink.StateSpec{Table: "t", Key: []sink.Column{{Name: "k", Type: sink.Text}}, ObservedAt: sink.Column{Name: "at", Type: sink.Timestamp}, UpdatedAt: "u"}
	assert.NoError(t, st.Validate())
	assert.True(t, st.Typed())
	assert.Equal(t, []string{"k", "at", "u"}, st.ColumnNames())
	st.Values = []sink.Column{{Name: "v"}}
	assert.False(t, st.Typed())
	for name, bad := range map[string]sink.StateSpec{
		"no table":       {Key: st.Key, ObservedAt: st.ObservedAt},
		"no key":         {Table: "t", ObservedAt: st.ObservedAt},
		"no observed_at": {Table: "t", Key: st.Key},
		"duplicate":      {Table: "t", Key: st.Key, ObservedAt: sink.Column{Name: "k"}},
	} {
		assert.ErrorIs(t, bad.Validate(), sink.ErrInvalid, name)
	}
}
