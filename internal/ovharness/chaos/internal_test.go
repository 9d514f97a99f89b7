package chaos

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/examples/ov/feed"
	"github.com/streamledger/streamledger/internal/ovharness/broker"
)

func TestGenerationsCountsDistinctOfOneGroup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "broker.log")
	log := "broker listening on [127.0.0.1:1]\n" +
		broker.GenerationLine("ov-chaos", 1) + "\n" +
		broker.GenerationLine("other", 2) + "\n" +
		broker.GenerationLine("ov-chaos", 2) + "\n" +
		broker.GenerationLine("ov-chaos", 2) + "\n" + // a restarted broker's log or a repeated line counts once
		broker.GenerationLine("ov-chaos-2", 3) + "\n"
	require.NoError(t, os.WriteFile(path, []byte(log), 0o644))
	n, err := generations(path, "ov-chaos")
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	_, err = generations(filepath.Join(t.TempDir(), "none.log"), "ov-chaos")
	assert.Error(t, err)
}

// TestSplitIdle: the first part is the feed before its end with partition 0 silent after the
// middle; the second holds the rest; every partition keeps its order in first+later.
func TestSplitIdle(t *testing.T) {
	f := Short().Feed
	f.Duration = time.Hour
	all, _, err := feed.Generate(f)
	require.NoError(t, err)
	end := f.Start.Add(f.Duration)
	first, later := splitIdle(all, 6, 0, end)
	require.Len(t, append(first[:len(first):len(first)], later...), len(all))
	mid := all[0].Timestamp.Add(end.Sub(all[0].Timestamp) / 2)
	var tail, p0 int
	for _, r := range first {
		assert.True(t, r.Timestamp.Before(end))
		if feed.Partition(r.Key, 6) == 0 {
			assert.False(t, r.Timestamp.After(mid))
		}
	}
	for _, r := range later {
		if !r.Timestamp.Before(end) {
			tail++
		} else {
			assert.Equal(t, int32(0), feed.Partition(r.Key, 6))
			p0++
		}
	}
	assert.Positive(t, tail, "the feed has a tail of delayed predictions")
	assert.Positive(t, p0)
	type src struct {
		topic string
		p     int32
	}
	order := func(recs ...[]feed.Record) map[src][]time.Time {
		out := map[src][]time.Time{}
		for _, rs := range recs {
			for _, r := range rs {
				k := src{r.Topic, feed.Partition(r.Key, 6)}
				out[k] = append(out[k], r.Timestamp)
			}
		}
		return out
	}
	assert.Equal(t, order(all), order(first, later), "each partition's records in their order")
}
