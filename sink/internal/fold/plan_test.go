package fold_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/fold"
	"github.com/streamledger/streamledger/sink/internal/merge"
	"github.com/streamledger/streamledger/sink/internal/specs"
)

var (
	t0   = time.Date(2026, 3, 2, 7, 0, 0, 0, time.UTC)
	end0 = t0.Add(5 * time.Minute)
	spec = specs.WithDefaults(sink.AggregateSpec{Attributes: []string{"owner"}})
)

func src(topic string, p int32) sink.TopicPartition {
	return sink.TopicPartition{Topic: topic, Partition: p}
}

func TestThrough(t *testing.T) {
	a0, a1, b0 := src("a", 0), src("a", 1), src("b", 0)
	for name, tc := range map[string]struct {
		progress []fold.Progress
		want     time.Time
		ok       bool
	}{
		"nothing registered":               {nil, fold.EndOfTime, true},
		"minimum of the holding":           {[]fold.Progress{{Source: a0, ClosedThrough: end0}, {Source: a1, ClosedThrough: t0}}, t0, true},
		"registered, nothing closed":       {[]fold.Progress{{Source: a0, ClosedThrough: end0}, {Source: a1}}, time.Time{}, false},
		"empty, nothing closed":            {[]fold.Progress{{Source: a0, ClosedThrough: end0}, {Source: a1, Empty: true}}, end0, true},
		"empty with a closed_through":      {[]fold.Progress{{Source: a0, ClosedThrough: end0}, {Source: a1, ClosedThrough: t0, Empty: true}}, t0, true},
		"a topic that does not contribute": {[]fold.Progress{{Source: a0, ClosedThrough: end0}, {Source: b0}}, end0, true},
	} {
		got, ok := fold.Through(slices.Values(tc.progress), func(topic string) bool { return topic == "a" })
		assert.Equal(t, tc.ok, ok, name)
		assert.Equal(t, tc.want, got, name)
	}
}

func partial(t *testing.T, id string, values ...float64) sink.Partial {
	return sink.Partial{Key: sink.Key{WindowStart: t0, Dimension: "line", DimensionID: id}, WindowEnd: end0, Stats: stats(t, values...)}
}

// A window that straddles two calls: the first stores its partials compactly and updates
// only changed progress; the second folds stored and in-memory partials, deletes the
// compact rows and writes the folded row, without storing its own partials.
func TestPlanStraddle(t *testing.T) {
	z := newCodec(t)
	a0, a1 := src("a", 0), src("a", 1)
	registered := []fold.Progress{{Source: a0}, {Source: a1}}
	c, err := fold.NewCall(z, spec, []sink.CloseBatch{{Source: a0, ClosedThrough: end0, Partials: []sink.Partial{partial(t, "x", 1, 2)}}, {Source: a1}})
	require.NoError(t, err)
	c.SetProgress(registered, nil)
	_, ok := c.Through()
	assert.False(t, ok, "a1 has closed nothing")
	p, err := c.Plan(nil, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, []fold.Progress{{Source: a0, ClosedThrough: end0}}, p.Progress, "a1's registration changes nothing")
	assert.Equal(t, []string{"a"}, p.Topics)
	require.Len(t, p.Partials, 1)
	rows, folded := merged(t, p)
	assert.Empty(t, rows)
	assert.Empty(t, folded)

	c, err = fold.NewCall(z, spec, []sink.CloseBatch{{Source: a1, ClosedThrough: end0, Partials: []sink.Partial{partial(t, "x", 3), partial(t, "y", 4)}}})
	require.NoError(t, err)
	c.SetProgress([]fold.Progress{{Source: a0, ClosedThrough: end0}, {Source: a1}}, []string{"a"})
	through, ok := c.Through()
	require.True(t, ok)
	assert.Equal(t, end0, through)
	p, err = c.Plan(p.Partials, nil, nil)
	require.NoError(t, err)
	assert.Empty(t, p.Partials, "the completing call stores no partial")
	assert.Equal(t, []time.Time{t0}, p.Delete)
	assert.True(t, p.Inserts())
	rows, folded = merged(t, p)
	require.Len(t, rows, 2)
	want, err := merge.Partials(sink.AggregateSpec{}, stats(t, 1, 2), stats(t, 3))
	require.NoError(t, err)
	assert.Equal(t, want, rows[0].Summary)
	require.Len(t, folded, 1)
	assert.Equal(t, 2, folded[0].Keys)
	blob, err := z.Decode(folded[0].Blob, spec.Attributes)
	require.NoError(t, err)
	assert.Equal(t, []sink.TopicPartition{a0, a1}, blob.Sources)
	assert.Len(t, blob.Entries, 2)

	// A retried attempt plans from what it reads again.
	c.SetProgress([]fold.Progress{{Source: a0, ClosedThrough: end0}, {Source: a1, ClosedThrough: end0}}, []string{"a"})
	stored := []fold.Folded{{Start: t0, End: end0, Sources: blob.Sources, Entries: blob.Entries}}
	again, err := c.Plan(nil, stored, []time.Time{t0})
	require.NoError(t, err)
	assert.Empty(t, again.Progress, "nothing changes twice")
	assert.Equal(t, 2, again.Ignored, "a replay of a folded source")
	assert.False(t, again.Inserts())
	rows, folded = merged(t, again)
	assert.Empty(t, rows)
	assert.Empty(t, folded)
}

// Stored partials read as blobs (Entries nil) fold as their decoded entries do, in a plan
// that stores them again (a replay of a window not complete) and in one that completes it;
// a corrupt blob fails the decode that needs it, naming the row.
func TestPlanDecodesStoredBlobs(t *testing.T) {
	z := newCodec(t)
	a0, a1 := src("a", 0), src("a", 1)
	first, err := fold.NewCall(z, spec, []sink.CloseBatch{{Source: a0, ClosedThrough: end0, Partials: []sink.Partial{partial(t, "x", 1, 2), partial(t, "y", 5)}}})
	require.NoError(t, err)
	first.SetProgress([]fold.Progress{{Source: a0}, {Source: a1}}, nil)
	p, err := first.Plan(nil, nil, nil)
	require.NoError(t, err)
	require.Len(t, p.Partials, 1)
	decoded := p.Partials[0]
	enc, err := z.Encode(nil, spec.Attributes, fold.Blob{Sources: []sink.TopicPartition{a0}, Entries: decoded.Entries})
	require.NoError(t, err)
	encoded := decoded
	encoded.Entries, encoded.Blob = nil, enc
	corrupt := encoded
	corrupt.Blob = enc[:len(enc)/2]

	// Not complete: a0 writes the window again (a replay), a1 has closed nothing. Complete:
	// a1 closes it after a0.
	plan := func(complete bool, stored fold.Partials) (*fold.Plan, error) {
		batch := sink.CloseBatch{Source: a0, ClosedThrough: end0, Partials: []sink.Partial{partial(t, "x", 3)}}
		if complete {
			batch.Source = a1
		}
		c, err := fold.NewCall(z, spec, []sink.CloseBatch{batch})
		require.NoError(t, err)
		c.SetProgress([]fold.Progress{{Source: a0, ClosedThrough: end0}, {Source: a1}}, []string{"a"})
		return c.Plan([]fold.Partials{stored}, nil, nil)
	}
	for _, complete := range []bool{false, true} {
		want, err := plan(complete, decoded)
		require.NoError(t, err)
		got, err := plan(complete, encoded)
		require.NoError(t, err)
		assert.Equal(t, want.Partials, got.Partials, "complete %v", complete)
		wantRows, wantFolded := merged(t, want)
		gotRows, gotFolded := merged(t, got)
		assert.Equal(t, wantRows, gotRows, "complete %v", complete)
		assert.Equal(t, wantFolded, gotFolded, "complete %v", complete)
		assert.Len(t, gotRows, map[bool]int{false: 0, true: 2}[complete])
		assert.Len(t, got.Partials, map[bool]int{false: 1, true: 0}[complete])
	}

	_, err = plan(false, corrupt)
	require.ErrorIs(t, err, fold.ErrCorrupt, "storing it again decodes it in Plan")
	assert.ErrorContains(t, err, "compact partials of a[0] at 2026-03-02T07:00:00Z")
	p, err = plan(true, corrupt)
	require.NoError(t, err, "a window to fold decodes its blobs as Merged folds it")
	_, err = p.Merged(0, func([]fold.Row, bool) error { return nil })
	require.ErrorIs(t, err, fold.ErrCorrupt)
	assert.ErrorContains(t, err, "compact partials of a[0]")
}

// merged returns the merged rows and the folded rows p writes.
func merged(t *testing.T, p *fold.Plan) ([]fold.Row, []fold.FoldedBlob) {
	t.Helper()
	var rows []fold.Row
	folded, err := p.Merged(0, func(rs []fold.Row, _ bool) error {
		rows = append(rows, rs...)
		return nil
	})
	require.NoError(t, err)
	return rows, folded
}

func TestNewCallWithoutCodec(t *testing.T) {
	_, err := fold.NewCall(nil, spec, nil)
	require.ErrorIs(t, err, sink.ErrInvalid)
	assert.ErrorContains(t, err, "nil Codec")
}
