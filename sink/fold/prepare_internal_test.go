package fold

import (
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

func TestPrepareCollapsesSortsAndConvertsToUTC(t *testing.T) {
	ams := time.FixedZone("CET", 3600)
	end := t0.Add(5 * time.Minute)
	k := func(id string) sink.Key { return sink.Key{WindowStart: t0.In(ams), Dimension: "line", DimensionID: id} }
	in := sink.CloseBatch{
		Source:        sink.TopicPartition{Topic: "arrivals", Partition: 3},
		ClosedThrough: end.In(ams),
		Partials: []sink.Partial{
			{Key: k("b"), WindowEnd: end, Stats: stats(t, 1)},
			{Key: k("a"), WindowEnd: end, Stats: stats(t, 2)},
			{Key: sink.Key{WindowStart: t0, Dimension: "line", DimensionID: "b"}, WindowEnd: end, Stats: stats(t, 3)}, // the same instant in UTC
		},
	}
	out, decoded, err := prepare(sink.AggregateSpec{}, in)
	require.NoError(t, err)
	require.Len(t, out.Partials, 2)
	assert.Equal(t, "a", out.Partials[0].DimensionID)
	assert.Equal(t, "b", out.Partials[1].DimensionID)
	assert.Equal(t, stats(t, 3), out.Partials[1].Stats, "the later partial of a key wins")
	require.Len(t, decoded, 2)
	assert.Equal(t, 2.0, decoded[0].Sum(), "the decoded stats in the partials' order")
	assert.Equal(t, 3.0, decoded[1].Sum())
	assert.Equal(t, time.UTC, out.ClosedThrough.Location())
	assert.Equal(t, time.UTC, out.Partials[0].WindowStart.Location())
	assert.Equal(t, "b", in.Partials[0].DimensionID, "the input is not modified")
}

func TestPrepareRejects(t *testing.T) {
	end := t0.Add(5 * time.Minute)
	good := sink.Partial{Key: sink.Key{WindowStart: t0, Dimension: "d", DimensionID: "i"}, WindowEnd: end, Stats: stats(t, 1)}
	src := sink.TopicPartition{Topic: "t"}
	with := func(f func(*sink.Partial)) []sink.Partial { p := good; f(&p); return []sink.Partial{p} }
	for name, b := range map[string]sink.CloseBatch{
		"no topic":                 {ClosedThrough: end, Partials: []sink.Partial{good}},
		"negative partition":       {Source: sink.TopicPartition{Topic: "t", Partition: -2}, ClosedThrough: end},
		"empty window":             {Source: src, ClosedThrough: end, Partials: with(func(p *sink.Partial) { p.WindowEnd = p.WindowStart })},
		"end after closed_through": {Source: src, ClosedThrough: end.Add(-time.Second), Partials: []sink.Partial{good}},
		"no stats":                 {Source: src, ClosedThrough: end, Partials: with(func(p *sink.Partial) { p.Stats = nil })},
		"garbled stats":            {Source: src, ClosedThrough: end, Partials: with(func(p *sink.Partial) { p.Stats = []byte("garbage") })},
		"empty stats":              {Source: src, ClosedThrough: end, Partials: with(func(p *sink.Partial) { p.Stats = stats(t) })},
		"undeclared attribute":     {Source: src, ClosedThrough: end, Partials: with(func(p *sink.Partial) { p.Attrs = map[string]string{"x": "y"} })},
	} {
		_, _, err := prepare(sink.AggregateSpec{Attributes: []string{"owner"}}, b)
		assert.ErrorIs(t, err, sink.ErrInvalid, name)
	}
	_, _, err := prepare(sink.AggregateSpec{}, sink.CloseBatch{Source: src})
	assert.NoError(t, err, "a batch without partials only records progress")
}
