package consumer

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/sink"
)

// len returns how many rows of table are buffered.
func (b *stateBuffer) len(table string) int {
	if t := b.tables[table]; t != nil {
		return len(t.rows)
	}
	return 0
}

// The state buffer keeps one row per (table, key): the one a flush of every row would write.
func TestStateBufferKeepsTheLatestRowOfAKey(t *testing.T) {
	at := func(d time.Duration) time.Time { return T0.Add(d) }
	row := func(table string, key []any, observed time.Time, v string) sink.StateRow {
		return sink.StateRow{Table: table, Key: key, ObservedAt: observed, Values: []any{v}}
	}
	k := func(vs ...any) []any { return vs }
	tests := []struct {
		name string
		rows []sink.StateRow
		want map[string][]sink.StateRow
	}{
		{
			name: "a newer row replaces the buffered one",
			rows: []sink.StateRow{row("a", k("v1"), at(0), "old"), row("a", k("v1"), at(time.Second), "new")},
			want: map[string][]sink.StateRow{"a": {row("a", k("v1"), at(time.Second), "new")}},
		},
		{
			name: "an older row is dropped",
			rows: []sink.StateRow{row("a", k("v1"), at(time.Second), "new"), row("a", k("v1"), at(0), "old")},
			want: map[string][]sink.StateRow{"a": {row("a", k("v1"), at(time.Second), "new")}},
		},
		{
			name: "a tie goes to the later row",
			rows: []sink.StateRow{row("a", k("v1"), at(0), "first"), row("a", k("v1"), at(0), "second")},
			want: map[string][]sink.StateRow{"a": {row("a", k("v1"), at(0), "second")}},
		},
		{
			name: "times differing below the sink's precision tie",
			rows: []sink.StateRow{row("a", k("v1"), at(time.Nanosecond), "first"), row("a", k("v1"), at(0), "second")},
			want: map[string][]sink.StateRow{"a": {row("a", k("v1"), at(0), "second")}},
		},
		{
			name: "keys, and tables, are apart; first-seen order is kept",
			rows: []sink.StateRow{
				row("a", k("v2"), at(0), "x"), row("a", k("v1"), at(0), "y"), row("b", k("v2"), at(0), "z"),
				row("a", k("v2"), at(time.Second), "x2"),
			},
			want: map[string][]sink.StateRow{
				"a": {row("a", k("v2"), at(time.Second), "x2"), row("a", k("v1"), at(0), "y")},
				"b": {row("b", k("v2"), at(0), "z")},
			},
		},
		{
			name: "composite keys compare by every value",
			rows: []sink.StateRow{
				row("a", k("t1", int64(1)), at(0), "x"), row("a", k("t1", int64(2)), at(0), "y"),
				row("a", k("t1", int64(1)), at(time.Second), "x2"),
			},
			want: map[string][]sink.StateRow{"a": {row("a", k("t1", int64(1)), at(time.Second), "x2"), row("a", k("t1", int64(2)), at(0), "y")}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b stateBuffer
			var bytes int64
			for _, r := range tt.rows {
				bytes += b.add(r)
			}
			var want int64
			for _, rows := range tt.want {
				for _, r := range rows {
					want += rowBytes(r) + indexedRowBytes
				}
			}
			assert.Equal(t, want, bytes, "the estimate follows the rows buffered")
			got, taken := map[string][]sink.StateRow{}, map[string]int64{}
			b.appendTo(got, taken)
			assert.Equal(t, tt.want, got)
			rows := map[string]int64{}
			for table, rs := range got {
				for _, r := range rs {
					rows[table] += rowBytes(r)
				}
			}
			assert.Equal(t, rows, taken, "the bytes taken are the rows' estimates, by table")
			for table := range tt.want {
				assert.Zero(t, b.len(table), "emptied")
			}
			again := map[string]int64{}
			b.appendTo(got, again)
			for _, n := range again {
				assert.Zero(t, n, "nothing is taken twice")
			}
			assert.Equal(t, tt.want, got, "nothing is taken twice")
		})
	}
}

// A flush empties a table. A small one keeps its storage; a large one keeps it while the
// flushes fill at least half of it, and otherwise (the load fell after a burst, or stopped)
// starts anew, so that its index does not stay grown, and uncounted, and makes its storage at
// its next row, for as many keys as the last flush took.
func TestStateBufferDropsTheIndexOfABurst(t *testing.T) {
	big := 2 * keepIndexBelow
	for _, tc := range []struct {
		name  string
		loads []int // keys buffered before each flush
		kept  bool  // whether the last flush kept the table's storage
	}{
		{"small", []int{keepIndexBelow / 2, keepIndexBelow / 2}, true},
		{"small and then idle", []int{keepIndexBelow / 2, 0}, true},
		{"a steady large load", []int{big, big, big}, true},
		{"a large load that falls by less than half", []int{big, big, big * 3 / 4}, true},
		{"a burst", []int{big, big, keepIndexBelow / 2}, false},
		{"a large load and then idle", []int{big, big, 0}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b stateBuffer
			var before *stateTable
			last := 0
			for _, keys := range tc.loads {
				for i := range keys {
					b.add(sink.StateRow{Table: "a", Key: []any{strconv.Itoa(i)}, ObservedAt: T0, Values: []any{i}})
				}
				before = b.tables["a"]
				out := map[string][]sink.StateRow{}
				b.appendTo(out, map[string]int64{})
				require.Len(t, out["a"], keys)
				assert.Zero(t, b.len("a"))
				last = keys
			}
			assert.Equal(t, tc.kept, b.tables["a"] == before)
			strings, others := b.tables["a"].index.Len()
			assert.Zero(t, strings+others, "the index is empty")
			if !tc.kept {
				assert.Nil(t, b.tables["a"].rows, "no storage before the next row")
			}
			b.add(sink.StateRow{Table: "a", Key: []any{"0"}, ObservedAt: T0, Values: []any{1}})
			assert.Equal(t, 1, b.len("a"), "the table takes rows again")
			assert.GreaterOrEqual(t, cap(b.tables["a"].rows), last, "sized for the last flush's keys")
		})
	}
}

// Many updates of few keys between two flushes buffer one row per key, and the flush writes
// each key's last row.
func TestStateRowsOfAKeyBufferOnce(t *testing.T) {
	// "<key> <seconds>": a state row of key, observed seconds after T0, valued by its offset.
	handler := func(m *kafka.Message) (Event[string], error) {
		f := strings.Fields(string(m.Value))
		sec, err := strconv.Atoi(f[1])
		if err != nil {
			return Event[string]{}, err
		}
		observed := T0.Add(time.Duration(sec) * time.Second)
		row := sink.StateRow{Table: sinkfixture.StateTable, Key: []any{f[0]}, ObservedAt: observed,
			Values: []any{"trip", 1.5, int64(m.TopicPartition.Offset)}}
		return Event[string]{Time: observed, State: []sink.StateRow{row}}, nil
	}
	h := newHarness(t, func(c *Config[string]) { c.Topics = map[string]Handler[string]{"t": handler} })
	p0 := tp("t", 0)
	h.assign(p0, -1, "")
	for i := range 1000 {
		h.p.dispatch(message(p0, int64(i), fmt.Sprintf("v%d %d", i%3, i)))
	}
	h.p.barrier()
	require.NoError(t, h.p.fatal())
	assert.Equal(t, 3, h.p.bufferedRows())
	job := h.p.prepare(nil, false)
	require.NotNil(t, job)
	got := map[any]any{}
	for _, r := range job.rowsOf(sinkfixture.StateTable) {
		got[r.Key[0]] = r.Values[2]
	}
	assert.Equal(t, map[any]any{"v0": int64(999), "v1": int64(997), "v2": int64(998)}, got)
}
