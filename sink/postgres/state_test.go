package postgres_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/postgres"
)

// A flush larger than one statement takes (unnest sends at most a few thousand rows per
// statement) is written whole, every row guarded, in every strategy.
func TestUpsertLatestOfManyRows(t *testing.T) {
	const n = 20_000
	for _, st := range strategies {
		t.Run(st.String(), func(t *testing.T) {
			ctx := testCtx(t)
			s, db := newSink(t, nil)
			postgres.SetStrategy(s, st)
			at := sinkfixture.Start()
			rows := func(at time.Time, speed float64) []sink.StateRow {
				out := make([]sink.StateRow, n)
				for i := range out {
					out[i] = sink.StateRow{Key: []any{fmt.Sprintf("veh-%05d", i)}, ObservedAt: at,
						Values: []any{fmt.Sprintf("trip-%d", i), speed, int64(i)}}
				}
				return out
			}
			require.NoError(t, s.UpsertLatest(ctx, tableRows(sinkfixture.StateTable, rows(at, 1))))
			// Newer rows for the even vehicles, older ones (ignored) for the odd.
			next := rows(at.Add(time.Minute), 2)
			for i := 1; i < n; i += 2 {
				next[i].ObservedAt = at.Add(-time.Minute)
			}
			require.NoError(t, s.UpsertLatest(ctx, tableRows(sinkfixture.StateTable, next)))

			var count, newer int
			table := pgx.Identifier{db.Schema, sinkfixture.StateTable}.Sanitize()
			require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*), count(*) FILTER (WHERE observed_at > $1) FROM "+table, at).Scan(&count, &newer))
			assert.Equal(t, n, count)
			assert.Equal(t, n/2, newer, "the even vehicles, and only they, moved on")
			for _, i := range []int{0, 1, 8191, 8192, 8193, 16384, n - 2, n - 1} {
				r, ok, err := s.Latest(ctx, sinkfixture.StateTable, fmt.Sprintf("veh-%05d", i))
				require.NoError(t, err)
				require.True(t, ok, "vehicle %d", i)
				want := at
				if i%2 == 0 {
					want = at.Add(time.Minute)
				}
				assert.True(t, r.ObservedAt.Equal(want), "vehicle %d observed at %v, expected %v", i, r.ObservedAt, want)
				assert.Equal(t, int64(i), r.Values[2], "vehicle %d", i)
			}
		})
	}
}
