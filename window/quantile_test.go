package window

import (
	"bufio"
	"cmp"
	"encoding/hex"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQuantileMethodExact(t *testing.T) {
	tests := []struct {
		name        string
		vals        []float64 // sorted
		q           float64
		linear, nrk float64
	}{
		{"one value", []float64{7}, 0.9, 7, 7},
		{"two, median", []float64{0, 10}, 0.5, 5, 0},
		{"two, p90", []float64{0, 10}, 0.9, 9, 10},
		{"ten, p90", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.9, 9.1, 9},
		{"ten, p10", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.1, 1.9, 1},
		{"ten, median", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.5, 5.5, 5},
		{"q = 0", []float64{-3, 1, 4}, 0, -3, -3},
		{"q = 1", []float64{-3, 1, 4}, 1, 4, 4},
		{"rank on a boundary", []float64{1, 2, 3, 4}, 0.25, 1.75, 1},
		{"negative", []float64{-30, -20, -10}, 0.9, -12, -10},
		{"duplicates", []float64{2, 2, 2, 5}, 0.5, 2, 2},
		{"ties across the rank", []float64{1, 3, 3, 3, 9}, 0.99, 8.76, 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.InDelta(t, tt.linear, Linear.exact(tt.vals, tt.q), 1e-12)
			assert.Equal(t, tt.nrk, NearestRank.exact(tt.vals, tt.q))
			s := statsOf(t, tt.vals...)
			assert.Equal(t, Linear.exact(tt.vals, tt.q), s.Quantile(Linear, tt.q), "Stats.Quantile is Exact while exact")
			assert.Equal(t, NearestRank.exact(tt.vals, tt.q), s.Quantile(NearestRank, tt.q))
		})
	}
}

func TestQuantileMethodInvalid(t *testing.T) {
	s := statsOf(t, 1, 2, 3)
	for name, got := range map[string]float64{
		"empty":            Linear.exact(nil, 0.5),
		"q above 1":        NearestRank.exact([]float64{1}, 1.5),
		"q NaN":            Linear.exact([]float64{1}, math.NaN()),
		"unknown method":   QuantileMethod(9).exact([]float64{1}, 0.5),
		"unknown on Stats": s.Quantile(QuantileMethod(9), 0.5),
	} {
		assert.True(t, math.IsNaN(got), name)
	}
	assert.Equal(t, "linear", Linear.String())
	assert.Equal(t, "nearest-rank", NearestRank.String())
	assert.Equal(t, "QuantileMethod(9)", QuantileMethod(9).String())
	assert.False(t, QuantileMethod(2).Valid())
}

// TestExactLimit checks each limit where it applies: a Stats stays exact up to its limit,
// a Windows' partials take the configured limit, and a merge is exact while its parts are
// exact and its total is within the limit.
func TestExactLimit(t *testing.T) {
	tests := []struct {
		name    string
		setting int
		limit   int // ExactLimit()
	}{
		{"none", -1, 0},
		{"one", 1, 1},
		{"small", 16, 16},
		{"default", 0, DefaultExactLimit},
		{"large", 1000, 1000},
		{"maximum", MaxExactLimit, MaxExactLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStats()
			require.NoError(t, s.SetExactLimit(tt.setting))
			assert.Equal(t, tt.limit, s.ExactLimit())
			vals := seq(0, tt.limit)
			for _, v := range vals {
				require.NoError(t, s.Add(v))
			}
			assert.True(t, s.Exact() || tt.limit == 0, "exact up to the limit")
			require.NoError(t, s.Add(-1))
			assert.False(t, s.Exact(), "a digest past the limit")

			w, err := New(Config[string]{ExactLimit: tt.setting})
			require.NoError(t, err)
			t0 := time.Unix(0, 0)
			require.NoError(t, w.Add(t0, "a", 1e6))
			for i := range tt.limit {
				require.NoError(t, w.AddKeys(t0, float64(i), "a", "b"))
			}
			ps := w.Close(t0.Add(DefaultSize))
			if tt.limit == 0 {
				require.Len(t, ps, 1)
				assert.False(t, ps[0].Stats.Exact(), "a digest from the first value")
				return
			}
			require.Len(t, ps, 2)
			assert.False(t, ps[0].Stats.Exact(), "a: limit+1 values")
			assert.True(t, ps[1].Stats.Exact(), "b: limit values")
			assert.Equal(t, tt.limit, ps[1].Stats.ExactLimit())

			half := statsWithLimit(t, tt.setting, seq(0, tt.limit/2)...)
			rest := statsWithLimit(t, tt.setting, seq(tt.limit/2, tt.limit)...)
			m, err := Merge(half, rest)
			require.NoError(t, err)
			assert.Equal(t, tt.limit > 0, m.Exact(), "a merge within the limit is exact")
			more, err := Merge(m, statsWithLimit(t, tt.setting, 5))
			require.NoError(t, err)
			assert.False(t, more.Exact(), "a merge past the limit is a digest")
			assert.Equal(t, tt.limit, more.ExactLimit())
		})
	}
}

func statsWithLimit(t *testing.T, limit int, vals ...float64) *Stats {
	t.Helper()
	s := NewStats()
	require.NoError(t, s.SetExactLimit(limit))
	for _, v := range vals {
		require.NoError(t, s.Add(v))
	}
	return s
}

func TestExactLimitInvalid(t *testing.T) {
	_, err := New(Config[string]{ExactLimit: MaxExactLimit + 1})
	require.ErrorIs(t, err, ErrConfig)
	assert.Contains(t, err.Error(), "ExactLimit")
	s := statsWithLimit(t, 10)
	err = s.SetExactLimit(MaxExactLimit + 1)
	require.ErrorIs(t, err, ErrConfig)
	assert.Equal(t, 10, s.ExactLimit(), "a refused limit changes nothing")
}

// TestMergeExactLimit checks that decoded parts merge by the limit set on them, whatever
// the limit of the writer, and that the largest limit of the parts decides.
func TestMergeExactLimit(t *testing.T) {
	a := statsWithLimit(t, 1000, seq(0, 300)...)
	b := statsWithLimit(t, 1000, seq(300, 600)...)
	decode := func(s *Stats, limit int) *Stats {
		enc, err := s.MarshalBinary()
		require.NoError(t, err)
		d := NewStats()
		require.NoError(t, d.SetExactLimit(limit))
		require.NoError(t, d.UnmarshalBinary(enc))
		assert.Equal(t, cmp.Or(limit, DefaultExactLimit), d.ExactLimit(), "UnmarshalBinary keeps the reader's limit")
		return d
	}
	tests := []struct {
		name  string
		parts []*Stats
		exact bool
	}{
		{"writers' limit", []*Stats{a, b}, true},
		{"decoded with the same limit", []*Stats{decode(a, 1000), decode(b, 1000)}, true},
		{"decoded with the default", []*Stats{decode(a, 0), decode(b, 0)}, false},
		{"the largest limit decides", []*Stats{decode(a, 0), decode(b, 1000)}, true},
		{"a digest part", []*Stats{decode(a, 1000), statsWithLimit(t, 10, seq(0, 20)...)}, false},
	}
	all := seq(0, 600)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Merge(tt.parts...)
			require.NoError(t, err)
			assert.Equal(t, tt.exact, m.Exact())
			if tt.exact {
				assert.Equal(t, Linear.exact(all, 0.9), m.Quantile(Linear, 0.9))
			}
		})
	}
}

// TestDecodesStoredEncodings decodes Stats serialized before the exact limit and the
// quantile method could be chosen: they decode, re-encode to the same bytes and give the
// same linear quantiles.
func TestDecodesStoredEncodings(t *testing.T) {
	f, err := os.Open("testdata/v1.golden")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	rows := 0
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "#") {
			continue
		}
		fields := strings.Fields(sc.Text())
		require.Len(t, fields, 7)
		t.Run(fields[0], func(t *testing.T) {
			enc, err := hex.DecodeString(fields[1])
			require.NoError(t, err)
			var s Stats
			require.NoError(t, s.UnmarshalBinary(enc))
			count, err := strconv.ParseInt(fields[2], 10, 64)
			require.NoError(t, err)
			assert.Equal(t, count, s.Count())
			for i, q := range []float64{0.1, 0.5, 0.9, 0.99} {
				bits, err := strconv.ParseUint(fields[3+i], 16, 64)
				require.NoError(t, err)
				assert.Equal(t, math.Float64frombits(bits), s.Quantile(Linear, q), "q=%v", q)
			}
			again, err := s.MarshalBinary()
			require.NoError(t, err)
			assert.Equal(t, enc, again)
		})
		rows++
	}
	require.NoError(t, sc.Err())
	assert.Equal(t, 5, rows)
}
