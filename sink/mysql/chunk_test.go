package mysql_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/sinkbench"
	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/merge"
	"github.com/streamledger/streamledger/sink/mysql"
)

// Batches above a statement's bounds go out in several statements of the same transaction
// and store the same rows: a window of 7,000 keys passes the 65,535 placeholders of one
// statement (11 per merged row), and a small MaxStatementBytes cuts every batch into many.
func TestBatchesAcrossStatements(t *testing.T) {
	ctx := testCtx(t)
	w := sinkbench.NewWorkload(t, 3, 3)
	start := sinkfixture.Start()
	var rows []sink.StateRow
	for i := range 12000 { // above 65,535 / 6 placeholders
		rows = append(rows, sink.StateRow{Table: sinkfixture.StateTable, Key: []any{fmt.Sprintf("veh-%05d", i)}, ObservedAt: start,
			Values: []any{"t", float64(i), int64(i)}})
	}
	var results [][]sink.Aggregate
	for _, maxBytes := range []int{0, 4096} {
		s, _ := newSink(t, func(c *mysql.Config) { c.MaxStatementBytes = maxBytes })
		for _, call := range w.Calls(start, 1, false) {
			require.NoError(t, s.WriteClose(ctx, call...))
		}
		got, err := s.Aggregates(ctx, start)
		require.NoError(t, err)
		require.Len(t, got, len(w.Merged), "MaxStatementBytes %d", maxBytes)
		results = append(results, got)

		require.NoError(t, s.UpsertLatest(ctx, rows))
		for _, i := range []int{0, 10921, 10922, 11999} {
			r, ok, err := s.Latest(ctx, sinkfixture.StateTable, fmt.Sprintf("veh-%05d", i))
			require.NoError(t, err)
			require.True(t, ok, i)
			assert.Equal(t, int64(i), r.Values[2])
		}
	}
	assert.Equal(t, results[0], results[1])
	counts := map[sink.Key]int64{}
	for _, r := range results[0] {
		counts[r.Key] = r.Count
	}
	for _, m := range w.Merged {
		sum, err := merge.Partials(sinkfixture.Aggregates(), m.Stats)
		require.NoError(t, err)
		assert.Equal(t, sum.Count, counts[m.Key], "%s/%s", m.Dimension, m.DimensionID)
	}
}
