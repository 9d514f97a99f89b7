package postgres_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/pgtest"
	"github.com/streamledger/streamledger/internal/quantile"
	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/merge"
	"github.com/streamledger/streamledger/sink/postgres"
	"github.com/streamledger/streamledger/window"
)

// oracleQs are the quantiles compared with PostgreSQL: the ends, the usual ones, and ranks
// that fall between two values or exactly on one for many sizes.
var oracleQs = []float64{0, 0.001, 0.01, 0.1, 0.25, 1.0 / 3, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1}

// multiset draws n values from one of several shapes: few distinct integers (ties and
// duplicates), negative and positive integers, fractions, mixed magnitudes, one repeated
// value.
func multiset(r *rand.Rand, n int) []float64 {
	out := make([]float64, n)
	shape := r.IntN(5)
	for i := range out {
		switch shape {
		case 0:
			out[i] = float64(r.IntN(5)*60 - 120)
		case 1:
			out[i] = float64(r.IntN(2000) - 1000)
		case 2:
			out[i] = r.NormFloat64() * 97.3
		case 3:
			out[i] = math.Copysign(math.Pow(10, r.Float64()*74-37), r.Float64()-0.3)
		case 4:
			out[i] = -42.5
		}
	}
	return out
}

// pgPercentiles returns, per multiset, PostgreSQL's percentile_cont and percentile_disc of
// its values at every q.
func pgPercentiles(t *testing.T, db *pgtest.DB, sets [][]float64, qs []float64) (cont, disc [][]float64) {
	var ids []int32
	var vals []float64
	for i, s := range sets {
		for _, v := range s {
			ids, vals = append(ids, int32(i)), append(vals, v)
		}
	}
	rows, err := db.Pool.Query(testCtx(t), `SELECT id, percentile_cont($3::float8[]) WITHIN GROUP (ORDER BY v),
		percentile_disc($3::float8[]) WITHIN GROUP (ORDER BY v)
		FROM unnest($1::int4[], $2::float8[]) AS s(id, v) GROUP BY id ORDER BY id`, ids, vals, qs)
	require.NoError(t, err)
	for rows.Next() {
		var id int32
		var c, d []float64
		require.NoError(t, rows.Scan(&id, &c, &d))
		require.Equal(t, int32(len(cont)), id)
		cont, disc = append(cont, c), append(disc, d)
	}
	require.NoError(t, rows.Err())
	require.Len(t, cont, len(sets))
	return cont, disc
}

// TestQuantilesEqualPostgres uses PostgreSQL as the oracle of both quantile definitions:
// for random multisets of every size from 1 to the exact limit (and to a raised limit),
// split into partials and merged, window.Linear equals percentile_cont and
// window.NearestRank equals percentile_disc, as float64s, through window.Stats and through
// merge.Partials with the spec's method and limit.
func TestQuantilesEqualPostgres(t *testing.T) {
	db := pgtest.New(t)
	r := rand.New(rand.NewPCG(16, 2026))
	qs := oracleQs
	for range 7 {
		qs = append(qs, r.Float64())
	}
	for _, limit := range []int{0, 1000} {
		t.Run(fmt.Sprintf("exact limit %d", limit), func(t *testing.T) {
			n := window.DefaultExactLimit
			if limit > 0 {
				n = limit
			}
			var sets [][]float64
			for size := 1; size <= n; size += 1 + size/64 {
				sets = append(sets, multiset(r, size), multiset(r, size))
			}
			cont, disc := pgPercentiles(t, db, sets, qs)
			for i, vals := range sets {
				parts := splitPartials(t, r, limit, vals)
				sorted := slices.Sorted(slices.Values(vals))
				for j, q := range qs {
					for _, c := range []struct {
						m     window.QuantileMethod
						exact func([]float64, float64) float64
						want  float64
					}{{window.Linear, quantile.Linear, cont[i][j]}, {window.NearestRank, quantile.NearestRank, disc[i][j]}} {
						what := fmt.Sprintf("%v n=%d q=%v", c.m, len(vals), q)
						require.Equal(t, c.want, c.exact(sorted, q), what)
						merged := mergeParts(t, limit, parts)
						require.True(t, merged.Exact(), what)
						require.Equal(t, c.want, merged.Quantile(c.m, q), "%s: window.Stats", what)
						if q > 0 {
							spec := sink.AggregateSpec{Quantile: q, QuantileMethod: c.m, ExactLimit: limit}
							sum, err := merge.Partials(spec, parts...)
							require.NoError(t, err)
							require.Equal(t, c.want, sum.Quantile, "%s: SummarizePartials", what)
						}
					}
				}
			}
			t.Logf("%d multisets of 1 to %d values, %d quantiles each: equal to percentile_cont and percentile_disc",
				len(sets), n, len(qs))
		})
	}
}

// splitPartials serializes vals as one to four partials built with the exact limit.
func splitPartials(t *testing.T, r *rand.Rand, limit int, vals []float64) [][]byte {
	parts := make([][]float64, 1+r.IntN(4))
	for _, v := range vals {
		i := r.IntN(len(parts))
		parts[i] = append(parts[i], v)
	}
	var out [][]byte
	for _, p := range parts {
		if len(p) > 0 {
			out = append(out, sinkfixture.StatsWithLimit(t, limit, p...))
		}
	}
	return out
}

func mergeParts(t *testing.T, limit int, parts [][]byte) *window.Stats {
	stats := make([]*window.Stats, len(parts))
	for i, p := range parts {
		stats[i] = window.NewStats()
		require.NoError(t, stats[i].SetExactLimit(limit))
		require.NoError(t, stats[i].UnmarshalBinary(p))
	}
	m, err := window.Merge(stats...)
	require.NoError(t, err)
	return m
}

// TestMergedRowsEqualPostgres writes partials of three partitions through the sink and
// compares each stored merged row's quantile with PostgreSQL's percentile over the same
// values, stored beside it: every key within the exact limit matches exactly.
func TestMergedRowsEqualPostgres(t *testing.T) {
	tests := []struct {
		name   string
		method window.QuantileMethod
		limit  int
		q      float64
		fn     string
	}{
		{"linear P90", window.Linear, 0, 0.9, "percentile_cont"},
		{"nearest-rank P90", window.NearestRank, 0, 0.9, "percentile_disc"},
		{"nearest-rank P99, raised limit", window.NearestRank, 900, 0.99, "percentile_disc"},
		{"linear median, raised limit", window.Linear, 900, 0.5, "percentile_cont"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t)
			s, db := newSink(t, func(c *postgres.Config) {
				c.Aggregates.QuantileMethod, c.Aggregates.ExactLimit, c.Aggregates.Quantile = tt.method, tt.limit, tt.q
			})
			_, err := db.Pool.Exec(ctx, `CREATE TABLE raw (dimension_id text, v float8)`)
			require.NoError(t, err)
			r := rand.New(rand.NewPCG(uint64(i), 3))
			start := time.Date(2026, 3, 2, 7, 0, 0, 0, time.UTC)
			end := start.Add(5 * time.Minute)
			var ids []string
			var raw []float64
			for p := range int32(3) {
				b := sink.CloseBatch{Source: sink.TopicPartition{Topic: "arrivals", Partition: p}, ClosedThrough: end}
				for k := range 40 {
					vals := multiset(r, 1+r.IntN(exactValues(tt.limit)/2))
					id := fmt.Sprintf("L%02d", k)
					for _, v := range vals {
						ids, raw = append(ids, id), append(raw, v)
					}
					b.Partials = append(b.Partials, sink.Partial{Key: sink.Key{WindowStart: start, Dimension: "line", DimensionID: id},
						WindowEnd: end, Stats: sinkfixture.StatsWithLimit(t, tt.limit, vals...)})
				}
				require.NoError(t, s.WriteClose(ctx, b))
			}
			_, err = db.Pool.Exec(ctx, `INSERT INTO raw SELECT * FROM unnest($1::text[], $2::float8[])`, ids, raw)
			require.NoError(t, err)
			limit := exactValues(tt.limit)
			var checked, differ int
			err = db.Pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*), count(*) FILTER (WHERE a.p90_value <> r.pct)
				FROM aggregates a JOIN (SELECT dimension_id, count(*) AS n, %s($1) WITHIN GROUP (ORDER BY v) AS pct
				FROM raw GROUP BY dimension_id) r USING (dimension_id) WHERE r.n <= $2 AND a.event_count = r.n`, tt.fn),
				tt.q, limit).Scan(&checked, &differ)
			require.NoError(t, err)
			assert.Positive(t, checked)
			assert.Zero(t, differ, "merged rows within the exact limit that differ from %s(%v)", tt.fn, tt.q)
			t.Logf("%d merged rows of at most %d values compared with %s(%v)", checked, limit, tt.fn, tt.q)
		})
	}
}

// exactValues returns how many values a positive or zero exact limit setting keeps.
func exactValues(setting int) int {
	if setting == 0 {
		return window.DefaultExactLimit
	}
	return setting
}
