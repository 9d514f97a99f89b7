package produce_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/examples/ov/feed"
	"github.com/streamledger/streamledger/internal/kafkatest"
	"github.com/streamledger/streamledger/internal/ovharness/produce"
)

// TestPlacement produces a feed and reads it back: every record is in the partition
// feed.Partition names, in the feed's order, with its timestamp, key and value.
func TestPlacement(t *testing.T) {
	const n = 5
	cluster := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{feed.DefaultPositionsTopic: n, feed.DefaultPredictionsTopic: n}})
	recs, _, err := feed.Generate(feed.Config{Seed: 3, Scale: 0.02, Start: time.Date(2026, 3, 10, 8, 0, 0, 0, feed.CET()),
		Duration: 10 * time.Minute, MalformedShare: 0.05})
	require.NoError(t, err)

	ctx := context.Background()
	p, err := produce.New(ctx, cluster.Addr(), []string{feed.DefaultPositionsTopic, feed.DefaultPredictionsTopic},
		cluster.ConfigMap())
	require.NoError(t, err)
	assert.Equal(t, int32(n), p.Partitions(feed.DefaultPredictionsTopic))
	for _, r := range recs {
		require.NoError(t, p.Send(ctx, r))
	}
	require.NoError(t, p.Flush(ctx))
	delivered, failed := p.Counts()
	assert.Equal(t, int64(len(recs)), delivered)
	assert.Zero(t, failed)
	p.Close(time.Second)

	want := map[string]map[int32][]feed.Record{}
	for _, r := range recs {
		if want[r.Topic] == nil {
			want[r.Topic] = map[int32][]feed.Record{}
		}
		part := feed.Partition(r.Key, n)
		want[r.Topic][part] = append(want[r.Topic][part], r)
	}
	for topic, parts := range want {
		got := map[int32][]kafkatest.Record{}
		for _, r := range cluster.ReadAll(t, topic) {
			got[r.Partition] = append(got[r.Partition], r)
		}
		for part, rs := range parts {
			require.Len(t, got[part], len(rs), "%s/%d", topic, part)
			for i, r := range rs {
				g := got[part][i]
				assert.Equal(t, int64(i), g.Offset)
				assert.Equal(t, r.Key, g.Key)
				assert.Equal(t, r.Value, g.Value)
				assert.True(t, r.Timestamp.Equal(g.Timestamp), "%v != %v", r.Timestamp, g.Timestamp)
			}
		}
	}

	_, err = produce.New(ctx, cluster.Addr(), []string{"missing"}, cluster.ConfigMap())
	assert.Error(t, err)
}
