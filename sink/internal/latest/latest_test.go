package latest_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/latest"
)

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
			got, err := latest.Prepare(tc.rows, lookup)
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
