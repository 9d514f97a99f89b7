package postgres_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/quantile"
	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/sink"
)

// Against the real server: the same finalized window
// upserted twice reads back as one row (10, 144.0, 300.0), count 10 not 20.
func TestDuplicateDeliveryDoesNotDoubleCountInRealPostgres(t *testing.T) {
	ctx := testCtx(t)
	s, db := newSink(t, nil)

	// The ten values: mean 144 (sum 1440) and P90 300 by window's exact quantile.
	sorted := append([]float64(nil), sinkfixture.KnownValues()...)
	slices.Sort(sorted)
	require.Equal(t, 300.0, quantile.Linear(sorted, 0.9))

	start := time.Date(2026, 3, 2, 7, 0, 0, 0, time.UTC)
	end := start.Add(5 * time.Minute)
	key := sink.Key{WindowStart: start, Dimension: "line", DimensionID: "GVB:17"}
	agg := sink.CloseBatch{
		Source:        sink.TopicPartition{Topic: "arrivals", Partition: 0},
		ClosedThrough: end,
		Partials:      []sink.Partial{{Key: key, WindowEnd: end, Attrs: map[string]string{"owner": "GVB"}, Stats: sinkfixture.Stats(t, sinkfixture.KnownValues()...)}},
	}
	require.NoError(t, s.WriteClose(ctx, agg))
	require.NoError(t, s.WriteClose(ctx, agg))

	rows, err := db.Pool.Query(ctx,
		"SELECT event_count, mean_value, p90_value FROM aggregates "+
			"WHERE window_start = $1 AND dimension = $2 AND dimension_id = $3",
		key.WindowStart, key.Dimension, key.DimensionID)
	require.NoError(t, err)
	type row struct {
		Count   int64
		Mean, Q float64
	}
	var got []row
	for rows.Next() {
		var r row
		require.NoError(t, rows.Scan(&r.Count, &r.Mean, &r.Q))
		got = append(got, r)
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, []row{{10, 144.0, 300.0}}, got, "one row, not two; count 10, not 20")

	var partials, folded int
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM aggregates_partials), (SELECT count(*) FROM aggregates_folded)").Scan(&partials, &folded))
	assert.Equal(t, [2]int{0, 1}, [2]int{partials, folded}, "the complete window is folded: no partial is stored, one folded row")
}
