package consumer

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/window"
)

// The maps come from Config.Series, which may share one between series: merging the
// attributes of two window keys of one series must never write into either.
func TestAddAttrsNeverWritesItsArguments(t *testing.T) {
	tests := []struct {
		name       string
		into, from map[string]string
		want       map[string]string
		same       bool // the result is into itself: nothing to add
	}{
		{name: "nothing to add", into: map[string]string{"a": "1"}, from: nil, want: map[string]string{"a": "1"}, same: true},
		{name: "present names keep the first value", into: map[string]string{"a": "1"}, from: map[string]string{"a": "2"},
			want: map[string]string{"a": "1"}, same: true},
		{name: "a missing name is added to a copy", into: map[string]string{"a": "1"}, from: map[string]string{"a": "2", "b": "3"},
			want: map[string]string{"a": "1", "b": "3"}},
		{name: "into without attributes", into: nil, from: map[string]string{"b": "3"}, want: map[string]string{"b": "3"}},
		{name: "neither has any", into: nil, from: nil, want: nil, same: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			into, from := maps.Clone(tt.into), maps.Clone(tt.from)
			got := addAttrs(into, from)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.into, into, "into unchanged")
			assert.Equal(t, tt.from, from, "from unchanged")
			if tt.same && into != nil {
				got["probe"] = "x"
				assert.Equal(t, "x", into["probe"], "into itself is returned when nothing is added")
			}
		})
	}
}

// Two window keys of one series whose Series share maps: the closed window's partial carries
// both keys' attributes, and neither map changes.
func TestSeriesMapsAreOnlyRead(t *testing.T) {
	none := map[string]string{}                  // the series' map for key A: no attribute
	owned := map[string]string{"owner": "op-AB"} // for key B: one A's lacks
	h := newHarness(t, func(c *Config[string]) {
		c.Series = func(k string) sink.Series {
			switch k {
			case "A":
				return sink.Series{Dimension: "line", DimensionID: "AB", Attrs: none}
			case "B":
				return sink.Series{Dimension: "line", DimensionID: "AB", Attrs: owned}
			}
			return testKeys(k)
		}
	})
	p0 := tp("t", 0)
	h.assign(p0, -1, "")
	h.feed(p0, 0, "w 1 A 1", "w 2 B 2", "w 16 A 3") // the last moves the watermark past 12:05
	h.tick()
	closes := h.closes()
	require.Len(t, closes, 1)
	var got []sink.Partial
	for _, pa := range closes[0].Partials {
		if pa.DimensionID == "AB" {
			got = append(got, pa)
		}
	}
	require.Len(t, got, 1, "A and B merged into one partial")
	assert.Equal(t, map[string]string{"owner": "op-AB"}, got[0].Attrs)
	assert.Empty(t, none, "the first key's map is not written")
	assert.Equal(t, map[string]string{"owner": "op-AB"}, owned)
}

// A close's stats share blocks: each must read as MarshalBinary's bytes, and appending to
// one must never reach the next, whatever the sizes (a stats larger than a block gets an
// allocation of its own).
func TestStatsBlocksHoldEachStatsApart(t *testing.T) {
	var stats []*window.Stats
	for i := range 3000 {
		s := window.NewStats()
		n := 1 + i%7
		if i%1000 == 999 {
			n = 20000 // a digest larger than what a block has left
		}
		for v := range n {
			require.NoError(t, s.Add(float64(i*v)+0.5))
		}
		stats = append(stats, s)
	}
	var blocks statsBlocks
	got := make([][]byte, len(stats))
	for i, s := range stats {
		b, err := blocks.append(s)
		require.NoError(t, err)
		require.Equal(t, len(b), cap(b), "stats %d: capacity not capped", i)
		got[i] = b
	}
	for i := range got {
		_ = append(got[i], 0xff, 0xff, 0xff) // must copy, not write into the block
	}
	for i, s := range stats {
		want, err := s.MarshalBinary()
		require.NoError(t, err)
		assert.Equal(t, want, got[i], "stats %d", i)
	}
}

// The index of a close's sink keys finds every key again however their hashes collide.
func TestSeriesIndexSurvivesCollisions(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var keys []sink.Key
	for w := range 3 {
		for id := range 50 {
			keys = append(keys, sink.Key{WindowStart: t0.Add(time.Duration(w) * time.Minute),
				Dimension: []string{"line", "stop"}[id%2], DimensionID: fmt.Sprint(id / 2)})
		}
	}
	hashes := map[string]func(seriesKey) uint64{
		"seeded":    newSeriesIndex(0).hash,
		"collide":   func(seriesKey) uint64 { return 7 },
		"by window": func(k seriesKey) uint64 { return uint64(k.start) },
	}
	for name, hash := range hashes {
		t.Run(name, func(t *testing.T) {
			x := newSeriesIndex(len(keys))
			x.hash = hash
			var out []sink.Partial
			for _, k := range keys {
				_, found := x.find(out, k)
				require.False(t, found, "%v found before it was added", k)
				out = append(out, sink.Partial{Key: k})
			}
			for want, k := range keys {
				got, found := x.find(out, k)
				require.True(t, found, "%v lost", k)
				assert.Equal(t, want, got, "%v", k)
			}
		})
	}
}
