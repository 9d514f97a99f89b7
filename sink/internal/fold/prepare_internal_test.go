package fold

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/sink"
)

var stats = sinkfixture.Stats

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
	spec := sink.AggregateSpec{Attributes: []string{"owner"}}
	in.Partials[2].Attrs = map[string]string{"owner": "GVB"}
	p, err := prepare(spec, in)
	require.NoError(t, err)
	require.Len(t, p.entries, 2)
	assert.Equal(t, "a", p.entries[0].DimensionID)
	assert.Equal(t, "b", p.entries[1].DimensionID)
	assert.Equal(t, stats(t, 3), p.entries[1].Stats, "the later partial of a key wins")
	assert.Equal(t, stats(t, 2), p.entries[0].Stats, "each entry's stats as given")
	assert.Equal(t, []*string{nil}, p.entries[0].Attrs)
	require.NotNil(t, p.entries[1].Attrs[0])
	assert.Equal(t, "GVB", *p.entries[1].Attrs[0])
	assert.Equal(t, []span{{start: t0, end: end, lo: 0, hi: 2}}, p.windows)
	assert.Equal(t, time.UTC, p.ClosedThrough.Location())
	assert.Equal(t, time.UTC, p.windows[0].start.Location())
	assert.Equal(t, "b", in.Partials[0].DimensionID, "the input is not modified")

	out := p.batch(spec)
	require.Len(t, out.Partials, 2)
	assert.Equal(t, sink.Partial{Key: sink.Key{WindowStart: t0, Dimension: "line", DimensionID: "b"}, WindowEnd: end,
		Attrs: map[string]string{"owner": "GVB"}, Stats: stats(t, 3)}, out.Partials[1], "the batch as prepared")
	assert.Nil(t, out.Partials[0].Attrs)
	assert.Equal(t, time.UTC, out.Partials[0].WindowStart.Location())
}

// The entries of a batch of several windows fall into one span per window, in order.
func TestPrepareSpansWindows(t *testing.T) {
	t1, t2 := t0.Add(5*time.Minute), t0.Add(10*time.Minute)
	part := func(start time.Time, id string) sink.Partial {
		return sink.Partial{Key: sink.Key{WindowStart: start, Dimension: "line", DimensionID: id}, WindowEnd: start.Add(5 * time.Minute), Stats: stats(t, 1)}
	}
	p, err := prepare(sink.AggregateSpec{}, sink.CloseBatch{Source: sink.TopicPartition{Topic: "t"}, ClosedThrough: t2.Add(5 * time.Minute),
		Partials: []sink.Partial{part(t2, "a"), part(t0, "b"), part(t0, "a"), part(t2, "c")}})
	require.NoError(t, err)
	assert.Equal(t, []span{{start: t0, end: t1, lo: 0, hi: 2}, {start: t2, end: t2.Add(5 * time.Minute), lo: 2, hi: 4}}, p.windows)
	assert.Equal(t, "a", p.entries[2].DimensionID)
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
		_, err := prepare(sink.AggregateSpec{Attributes: []string{"owner"}}, b)
		assert.ErrorIs(t, err, sink.ErrInvalid, name)
	}
	_, err := prepare(sink.AggregateSpec{}, sink.CloseBatch{Source: src})
	assert.NoError(t, err, "a batch without partials only records progress")
}
