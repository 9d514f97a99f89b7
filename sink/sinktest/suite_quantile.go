package sinktest

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/quantile"
	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/merge"
	"github.com/streamledger/streamledger/window"
)

// testQuantileDefinition checks that merged rows follow the spec's quantile method and
// exact limit on every path: the first fold of a window, and the refold that merges a
// partition registered later. Within the limit the quantile is the method's exact one;
// past it, merge.Partials of the partials in order.
func testQuantileDefinition(t *testing.T, f Factory, _ Features) {
	tests := []struct {
		name   string
		method window.QuantileMethod
		limit  int
		q      float64
		values int // per partition
	}{
		{"linear, default limit", window.Linear, 0, 0.9, 60},
		{"nearest rank, default limit", window.NearestRank, 0, 0.9, 60},
		{"nearest rank, median", window.NearestRank, 0, 0.5, 31},
		{"nearest rank past the limit", window.NearestRank, 0, 0.9, 200},
		{"linear, raised limit", window.Linear, 1000, 0.75, 200},
		{"nearest rank, raised limit", window.NearestRank, 1000, 0.9, 200},
		{"nearest rank, no exact values", window.NearestRank, -1, 0.9, 20},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := ctxT(t)
			setup := defaultSetup()
			setup.Aggregates.QuantileMethod, setup.Aggregates.ExactLimit, setup.Aggregates.Quantile = tt.method, tt.limit, tt.q
			s := f(t, setup)
			register(t, ctx, s, tps(3)...)
			r := rand.New(rand.NewPCG(uint64(i), 7))
			_, end := win(0)
			var all []float64
			var parts [][]byte
			write := func(p int32) {
				vals := make([]float64, tt.values)
				for j := range vals {
					vals[j] = float64(r.IntN(400) - 100) // negatives, duplicates and ties
				}
				all = append(all, vals...)
				parts = append(parts, sinkfixture.StatsWithLimit(t, tt.limit, vals...))
				pa := partial(t, 0, "line", "A", vals...)
				pa.Stats = parts[len(parts)-1]
				require.NoError(t, s.WriteClose(ctx, closeOf(p, end, pa)))
			}
			// check compares the row with merge.Partials of stored: the
			// partials of the first fold, then the folded stats and the later partition's
			// partial.
			check := func(what string, stored ...[]byte) {
				got, ok := aggregate(t, ctx, s, keyOf(0, "line", "A"))
				require.True(t, ok, what)
				want, err := merge.Partials(setup.Aggregates, stored...)
				require.NoError(t, err)
				assert.Equal(t, want, got.Summary, what)
				sorted := slices.Sorted(slices.Values(all))
				if len(all) <= exactLimit(t, tt.limit) {
					assert.Equal(t, exactQuantile(tt.method, sorted, tt.q), got.Quantile, "%s: the exact quantile", what)
				}
			}
			for p := range int32(3) {
				write(p)
			}
			check("first fold", parts...)
			folded := mergeStats(t, setup.Aggregates, parts...)
			register(t, ctx, s, tp(3))
			write(3)
			check("refold with a partition registered later", folded, parts[3])
		})
	}
}

// mergeStats returns the serialized merge of parts, decoded by spec: the stats a sink keeps
// of a folded window.
func mergeStats(t testing.TB, spec sink.AggregateSpec, parts ...[]byte) []byte {
	stats := make([]*window.Stats, len(parts))
	for i, p := range parts {
		var err error
		stats[i], err = merge.Decode(spec, p)
		require.NoError(t, err)
	}
	m, err := window.Merge(stats...)
	require.NoError(t, err)
	b, err := m.MarshalBinary()
	require.NoError(t, err)
	return b
}

// exactLimit returns how many values a setting of an exact limit keeps exactly.
func exactLimit(t testing.TB, setting int) int {
	s := window.NewStats()
	require.NoError(t, s.SetExactLimit(setting))
	return s.ExactLimit()
}

// exactQuantile is the q-quantile of sorted values by method m, by its definition.
func exactQuantile(m window.QuantileMethod, sorted []float64, q float64) float64 {
	if m == window.NearestRank {
		return quantile.NearestRank(sorted, q)
	}
	return quantile.Linear(sorted, q)
}
