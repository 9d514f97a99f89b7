package consumer

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/kafkatest"
	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/sinktest"
)

func produceStream(t *testing.T, c *kafkatest.Cluster, topic string, payloads ...string) []*kafkatest.Record {
	t.Helper()
	recs := make([]*kafkatest.Record, len(payloads))
	for i, pl := range payloads {
		recs[i] = &kafkatest.Record{Topic: topic, Value: []byte(pl)}
	}
	c.Produce(t, recs...)
	return recs
}

// Consume, commit with metadata, restart: the committed metadata holds the watermark as of the
// committed offset, the restart restores max(metadata, closed_through), and every replayed
// message is decided as the first time.
func TestKafkaRestartRestoresTheWatermark(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"r": 1}})
	produceStream(t, c, "r", stream...)
	mem := newMemory(t)
	p0 := ledger.TopicPartition{Topic: "r", Partition: 0}

	first := start(t, "first", clientConfig(c, "gr", ""), mem, []string{"r"}, nil)
	waitDecided(t, map[ledger.TopicPartition]int64{p0: 7}, first)
	eventually(t, "offset 4 committed", func() bool { return c.Committed(t, "gr", "r")[0].Offset == 4 })
	require.NoError(t, first.stop(t))
	first.chk.verify(t)
	assert.Equal(t, streamOutcomes, outcomesOf(first.chk, p0, 8))

	co := c.Committed(t, "gr", "r")[0]
	assert.Equal(t, int64(4), co.Offset, "offset 4 waits for the window ending 12:20")
	cp, err := ledger.DecodeMetadata(co.Metadata)
	require.NoError(t, err)
	assert.Equal(t, at("7"), cp.Watermark, "the watermark after offsets 0-3")
	assert.Equal(t, at("14"), progress(t, mem, "r", 1)[0])

	for _, tc := range []struct {
		name     string
		mem      *sinktest.Memory
		restored time.Time
	}{
		{"same sink", mem, at("14")},
		{"progress lost", newMemory(t), at("7")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			again := start(t, "again", clientConfig(c, "gr", ""), tc.mem, []string{"r"}, nil)
			waitDecided(t, map[ledger.TopicPartition]int64{p0: 7}, again)
			require.NoError(t, again.stop(t))
			again.chk.verify(t)
			ai, ok := again.chk.lastAssign(p0)
			require.True(t, ok)
			assert.Equal(t, int64(4), ai.Committed)
			assert.Equal(t, at("7"), ai.MetadataWatermark)
			assert.Equal(t, tc.restored, ai.Watermark)
			d := again.chk.decisionsOf(p0)
			require.Len(t, d, 4, "offsets 4-7 replayed, nothing before")
			for off := int64(4); off < 8; off++ {
				assert.Equal(t, streamOutcomes[off], d[off], "offset %d decided as the first time", off)
			}
		})
	}
	// The first run's stored aggregates did not change through the replays.
	a, ok, err := mem.Aggregate(context.Background(), sink.Key{WindowStart: at("5"), Dimension: "line", DimensionID: "A"})
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, int64(2), a.Count)
}

func outcomesOf(chk *checker, tp ledger.TopicPartition, n int64) []Decision {
	d := chk.decisionsOf(tp)
	out := make([]Decision, n)
	for i := range out {
		out[i] = d[int64(i)]
	}
	return out
}

// Two consumers in one group, partitions moving between them, for the eager and the
// cooperative assignor: no commit ever passes a message that is not durable, and the stored
// aggregates equal those of a single consumer over the same input.
func TestKafkaPartitionsMovingBetweenConsumers(t *testing.T) {
	const partitions = 4
	rng := rand.New(rand.NewPCG(1, 2))
	batches := [][][]string{
		generate(rng, partitions, 40, 0),
		generate(rng, partitions, 40, 15*time.Minute),
		generate(rng, partitions, 40, 30*time.Minute),
	}
	topics := map[string]int32{"ref": partitions, "m-range": partitions, "m-cooperative-sticky": partitions}
	c := kafkatest.Start(t, kafkatest.Config{Topics: topics})

	// The reference: one consumer over everything.
	var recs []*kafkatest.Record
	for _, b := range batches {
		recs = append(recs, records("ref", b)...)
	}
	c.Produce(t, recs...)
	ref := newMemory(t)
	single := start(t, "single", clientConfig(c, "ref", ""), ref, []string{"ref"}, nil)
	waitDecided(t, lastOffsets(recs), single)
	require.NoError(t, single.stop(t))
	single.chk.verify(t)
	window := func(m *sinktest.Memory) []sink.Aggregate {
		return aggregates(t, m, T0.Add(-10*time.Minute), T0.Add(time.Hour))
	}
	want := window(ref)
	require.NotEmpty(t, want)
	wantProgress := progress(t, ref, "ref", partitions)

	for _, assignor := range []string{"range", "cooperative-sticky"} {
		t.Run(assignor, func(t *testing.T) {
			topic, group := "m-"+assignor, "g-"+assignor
			mem := newMemory(t)
			b1 := records(topic, batches[0])
			c.Produce(t, b1...)
			a := start(t, "a", clientConfig(c, group, assignor), mem, []string{topic}, nil)
			waitDecided(t, lastOffsets(b1), a)

			b := start(t, "b", clientConfig(c, group, assignor), mem, []string{topic}, nil)
			eventually(t, "both own partitions", func() bool {
				oa, ob := a.own.owns(), b.own.owns()
				return len(oa) > 0 && len(ob) > 0 && len(oa)+len(ob) == partitions
			})
			b2 := records(topic, batches[1])
			c.Produce(t, b2...)
			waitDecided(t, lastOffsets(b2), a, b)

			require.NoError(t, a.stop(t))
			b3 := records(topic, batches[2])
			c.Produce(t, b3...)
			waitDecided(t, lastOffsets(b3), b)
			require.NoError(t, b.stop(t))

			a.chk.verify(t)
			b.chk.verify(t)
			assert.Positive(t, a.chk.checkedCommits())
			assert.Positive(t, b.chk.checkedCommits())
			assert.Equal(t, want, window(mem), "the same aggregates as one consumer")
			assert.Equal(t, wantProgress, progress(t, mem, topic, partitions))
			for _, in := range []*instance{a, b} {
				cn := in.c.Counters()
				assert.Equal(t, cn.Consumed, cn.Admitted+cn.Late+cn.DeadLettered)
			}
			for p, co := range c.Committed(t, group, topic) {
				_, err := ledger.DecodeMetadata(co.Metadata)
				assert.NoError(t, err, "partition %d", p)
			}
		})
	}
}
