package sinktest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/sink"
)

// testPrecision writes times finer than sink.Precision: every implementation stores and
// compares them truncated to it, so two times that differ only below it are the same time.
func testPrecision(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	setup := defaultSetup()
	setup.Clock = func() time.Time { return sinkfixture.Now().Add(999 * time.Nanosecond) }
	s := f(t, setup)

	at := sinkfixture.Start().Add(30 * time.Second)
	latest := func() sink.StateRow {
		t.Helper()
		r, ok, err := s.Latest(ctx, sinkfixture.StateTable, "e-1")
		require.NoError(t, err)
		require.True(t, ok)
		return r
	}
	// Within one batch, two rows of a key a few hundred nanoseconds apart are a tie: the
	// later row in the batch wins, although its time is the earlier one.
	require.NoError(t, s.UpsertLatest(ctx, []sink.StateRow{
		stateRow("e-1", at.Add(700*time.Nanosecond), "a", 1, 1),
		stateRow("e-1", at.Add(300*time.Nanosecond), "b", 2, 2),
	}))
	assert.Equal(t, stateRow("e-1", at, "b", 2, 2), latest(), "observed_at is stored at sink.Precision")
	require.NoError(t, s.UpsertLatest(ctx, []sink.StateRow{stateRow("e-1", at.Add(999*time.Nanosecond), "c", 3, 3)}))
	assert.Equal(t, stateRow("e-1", at, "c", 3, 3), latest(), "the guard compares at sink.Precision: an equal time replaces")
	require.NoError(t, s.UpsertLatest(ctx, []sink.StateRow{stateRow("e-1", at.Add(-time.Nanosecond), "d", 4, 4)}))
	assert.Equal(t, stateRow("e-1", at, "c", 3, 3), latest(), "a time in the microsecond before is older")

	start := sinkfixture.Start().Add(400 * time.Nanosecond)
	end := start.Add(sinkfixture.WindowSize)
	p := sink.Partial{Key: sink.Key{WindowStart: start, Dimension: "line", DimensionID: "1"}, WindowEnd: end, Stats: sinkfixture.Stats(t, 4)}
	require.NoError(t, s.WriteClose(ctx, sink.CloseBatch{Source: tp(0), ClosedThrough: end.Add(300 * time.Nanosecond), Partials: []sink.Partial{p}}))
	rows, err := s.Aggregates(ctx, start)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.Equal(t, sink.AtPrecision(start), rows[0].WindowStart)
	assert.Equal(t, sink.AtPrecision(end), rows[0].WindowEnd)
	assert.Equal(t, sinkfixture.Now(), rows[0].ComputedAt, "the clock's reading is stored at sink.Precision")
	assert.True(t, rows[0].Complete)
	row, ok, err := s.Aggregate(ctx, sink.Key{WindowStart: start.Add(500 * time.Nanosecond), Dimension: "line", DimensionID: "1"})
	require.NoError(t, err)
	require.True(t, ok, "a key's window start is read at sink.Precision too")
	assert.Equal(t, rows[0], row)
	through, err := s.ClosedThrough(ctx, tp(0))
	require.NoError(t, err)
	assert.Equal(t, map[sink.TopicPartition]time.Time{tp(0): sink.AtPrecision(end)}, through)
	complete, ok, err := s.CompleteThrough(ctx, sinkfixture.Topic)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, sink.AtPrecision(end), complete)
}
