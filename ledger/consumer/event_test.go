package consumer

import (
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/sinktest"
)

// With a sink that tells its tables, an event whose state rows it does not declare is
// dead-lettered when decoded, instead of failing every state flush after it.
func TestStateRowsCheckedAgainstTheSink(t *testing.T) {
	good := stateRow(message(tp("t", 0), 0, ""), T0)
	for _, tc := range []struct {
		name string
		row  sink.StateRow
		want string
	}{
		{"unknown table", func() sink.StateRow { r := good; r.Table = "nope"; return r }(), `the sink declares no table "nope"`},
		{"short key", sink.StateRow{Table: sinkfixture.StateTable, ObservedAt: T0, Values: good.Values}, "0 key values, the table has 1 key columns"},
		{"short values", sink.StateRow{Table: sinkfixture.StateTable, Key: good.Key, ObservedAt: T0}, "0 values, the table has 3 value columns"},
		{"no time", sink.StateRow{Table: sinkfixture.StateTable, Key: good.Key, Values: good.Values}, "no observed-at time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config[string]) {
				c.Topics = map[string]Handler[string]{"t": func(*kafka.Message) (Event[string], error) {
					return Event[string]{Time: T0, State: []sink.StateRow{tc.row}}, nil
				}}
			})
			p0 := tp("t", 0)
			h.assign(p0, -1, "")
			h.feed(p0, 0, "anything")
			assert.Equal(t, []Decision{DeadLettered}, h.outcomes(p0, 1))
			require.Equal(t, 1, h.dlq.count())
			assert.Contains(t, h.dlq.sent[0].cause.Error(), tc.want)
		})
	}
}

// A Keys that maps a window key to an attribute the sink's aggregate spec does not declare
// stops the consumer at the first close, with an error naming Keys.
func TestUndeclaredAttributeStops(t *testing.T) {
	h := newHarness(t, func(c *Config[string]) {
		c.Series = func(k string) sink.Series {
			return sink.Series{Dimension: "line", DimensionID: k, Attrs: map[string]string{"colour": "red"}}
		}
	})
	p0 := tp("t", 0)
	h.assign(p0, -1, "")
	h.feed(p0, 0, "w 1 A 1", "w 7 A 2")
	h.p.tick(h.ctx, CommitTick)
	err := h.p.fatal()
	require.ErrorIs(t, err, ErrConfig)
	assert.Contains(t, err.Error(), `Series: the series of A carries attribute "colour"`)
	assert.Equal(t, int64(-1), h.committed(p0))
}

// The windows follow the exact limit of the sink's aggregate spec.
func TestWindowsFollowTheSinksExactLimit(t *testing.T) {
	mem, err := sinktest.NewMemory(sinktest.MemoryConfig{Aggregates: func() sink.AggregateSpec {
		a := sinkfixture.Aggregates()
		a.ExactLimit = 1000
		return a
	}(), Clock: sinkfixture.Now})
	require.NoError(t, err)
	s, err := Config[string]{
		Kafka: kafka.ConfigMap{"bootstrap.servers": "b:9092", "group.id": "g"}, Topics: map[string]Handler[string]{"t": testHandler},
		Sink: mem, Series: testKeys,
	}.validate()
	require.NoError(t, err)
	assert.Equal(t, 1000, s.win.ExactLimit)
}
