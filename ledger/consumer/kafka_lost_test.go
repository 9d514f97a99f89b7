package consumer

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/dlq/dlqkafka"
	"github.com/streamledger/streamledger/internal/kafkatest"
	"github.com/streamledger/streamledger/ledger"
)

// events returns n payloads of event-time-only messages from minute m on, one a second.
func events(m, n int) []string {
	out := make([]string, n)
	for i := range out {
		sec := m*60 + i
		out[i] = fmt.Sprintf("c %d:%02d", sec/60, sec%60)
	}
	return out
}

// produceEach writes each payload to topic's partition in a batch of its own.
func produceEach(t *testing.T, c *kafkatest.Cluster, topic string, partition int32, payloads []string, key func(int) []byte) {
	t.Helper()
	for i, pl := range payloads {
		r := &kafkatest.Record{Topic: topic, Partition: partition, Value: []byte(pl)}
		if key != nil {
			r.Key = key(i)
		}
		c.Produce(t, r)
	}
}

// deadLetters returns a dead-letter producer for c, closed with the test.
func deadLetters(t *testing.T, c *kafkatest.Cluster) *dlqkafka.Producer {
	t.Helper()
	prod, err := dlqkafka.NewProducer(dlqkafka.Config{Kafka: c.ConfigMap(), ConsumerID: "test-consumer"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = prod.Close(context.Background()) })
	return prod
}

// lostLetters decodes the letters of class dlq.ClassLost of topic.
func lostLetters(t *testing.T, c *kafkatest.Cluster, topic string) []dlq.DeadLetter {
	t.Helper()
	var out []dlq.DeadLetter
	for _, r := range c.ReadAll(t, topic) {
		hs := make([]dlq.Header, len(r.Headers))
		for i, h := range r.Headers {
			hs[i] = dlq.Header{Key: h.Key, Value: h.Value}
		}
		d, err := dlq.Decode(r.Key, r.Value, hs)
		require.NoError(t, err)
		if d.ErrorClass == dlq.ClassLost {
			out = append(out, d)
		}
	}
	return out
}

// Records deleted while the group is stopped, below its committed offset: the next start
// reports exactly the deleted range [committed, new log start). LostStop stops Run with
// ErrLostRecords and commits nothing past it; LostContinue records it as a dead letter, goes
// on from the log start, and what it decided plus what it lost is everything after the
// committed offset.
func TestKafkaTruncatedLogIsReported(t *testing.T) {
	for _, policy := range []LostPolicy{LostStop, LostContinue} {
		t.Run(policy.String(), func(t *testing.T) {
			c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"lt": 2, "dlq.lt": 2}})
			p0, p1 := ledger.TopicPartition{Topic: "lt", Partition: 0}, ledger.TopicPartition{Topic: "lt", Partition: 1}
			for p := range int32(2) {
				produceEach(t, c, "lt", p, events(0, 20), nil)
			}
			mem := newMemory(t)
			group := "g-" + policy.String()
			first := start(t, "first", clientConfig(c, group, ""), mem, []string{"lt"}, nil)
			waitDecided(t, map[ledger.TopicPartition]int64{p0: 19, p1: 19}, first)
			require.NoError(t, first.stop(t))
			committed := c.Committed(t, group, "lt")[0].Offset
			require.Equal(t, int64(20), committed, "event-time-only messages are durable at once")
			require.Empty(t, first.chk.lostRanges())

			for p := range int32(2) {
				produceEach(t, c, "lt", p, events(1, 20), nil)
			}
			c.DeleteRecords(t, "lt", 0, 30)
			prod := deadLetters(t, c)
			again := start(t, "again", clientConfig(c, group, ""), mem, []string{"lt"}, func(cfg *Config[string]) {
				cfg.LostRecords = policy
				cfg.DeadLetters = prod
			})
			want := LostInfo{TopicPartition: p0, From: 20, To: 30, Reason: lostAtAssign}
			if policy == LostStop {
				err := again.waitReturn(t)
				require.ErrorIs(t, err, ErrLostRecords)
				assert.Contains(t, err.Error(), "records lost before they were read: lt/0 offsets [20, 30) (10 records) were deleted before they were read")
				assert.Equal(t, []LostInfo{want}, again.chk.lostRanges())
				assert.Equal(t, int64(20), c.Committed(t, group, "lt")[0].Offset, "nothing committed past the lost range")
				assert.Empty(t, again.chk.decisionsOf(p0), "nothing of the partition decided")
				assert.Contains(t, again.logs.String(), `level=ERROR msg="records lost before they were read`)
				assert.Contains(t, again.logs.String(), "partition=lt[0] topic=lt from=20 to=30 records=10")
				return
			}
			waitDecided(t, map[ledger.TopicPartition]int64{p0: 39, p1: 39}, again)
			eventually(t, "committed through the end", func() bool {
				co := c.Committed(t, group, "lt")
				return co[0].Offset == 40 && co[1].Offset == 40
			})
			require.NoError(t, again.stop(t))
			again.chk.verify(t)
			assert.Equal(t, []LostInfo{want}, again.chk.lostRanges())
			cs := again.c.Counters()
			assert.Equal(t, int64(10), cs.Lost)
			assert.Equal(t, int64(10+20), cs.Consumed, "offsets 30-39 of partition 0 and 20-39 of partition 1")
			assert.Equal(t, int64(40-20)*2, cs.Consumed+cs.Lost, "decided plus lost is everything after the committed offsets")
			letters := lostLetters(t, c, "dlq.lt")
			require.Len(t, letters, 1)
			assert.Equal(t, "lt", letters[0].Topic)
			assert.Equal(t, int32(0), letters[0].Partition)
			assert.Equal(t, int64(20), letters[0].Offset)
			assert.Equal(t, int64(30), letters[0].LostEnd)

			third := start(t, "third", clientConfig(c, group, ""), mem, []string{"lt"}, func(cfg *Config[string]) {
				cfg.LostRecords = policy
				cfg.DeadLetters = prod
			})
			eventually(t, "both partitions assigned", func() bool { return len(third.own.owns()) == 2 })
			third.tick(t)
			require.NoError(t, third.stop(t))
			assert.Empty(t, third.chk.lostRanges(), "a range is reported once")
		})
	}
}

// gate blocks the handler at one offset of partition 0 until it is opened.
type gate struct {
	at      int64
	reached chan struct{}
	open    chan struct{}
	once    sync.Once
}

func (g *gate) handler(m *kafka.Message) (Event[string], error) {
	if m.TopicPartition.Partition == 0 && int64(m.TopicPartition.Offset) == g.at {
		g.once.Do(func() { close(g.reached) })
		<-g.open
	}
	return testHandler(m)
}

// A fetch finds the consumer's position below the log start: records were deleted while the
// consumer was behind. The consumer decides nothing of the deleted range it had not fetched,
// reports exactly the offsets it never decided, and, under LostContinue, goes on from the log
// start: every offset of the partition is decided or lost, never both. Under LostStop Run stops
// with ErrLostRecords.
func TestKafkaOutOfRangeFetchIsReported(t *testing.T) {
	for _, tc := range []struct {
		policy   LostPolicy
		assignor string // the cooperative one takes the partition back alone, the eager one all of them
	}{
		{LostStop, ""},
		{LostContinue, ""},
		{LostContinue, "cooperative-sticky"},
	} {
		policy := tc.policy
		group := "g-" + policy.String() + tc.assignor
		t.Run(policy.String()+" "+tc.assignor, func(t *testing.T) {
			c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"of": 1, "dlq.of": 1}})
			p0 := ledger.TopicPartition{Topic: "of", Partition: 0}
			produceEach(t, c, "of", 0, events(0, 40), nil)
			g := &gate{at: 10, reached: make(chan struct{}), open: make(chan struct{})}
			kc := clientConfig(c, group, tc.assignor)
			// One record batch a fetch, and no fetch while a message waits: the client holds
			// little beyond the message the handler blocks on.
			kc["max.partition.fetch.bytes"], kc["queued.min.messages"], kc["queued.max.messages.kbytes"] = 1, 1, 1
			in := start(t, "behind", kc, newMemory(t), []string{"of"}, func(cfg *Config[string]) {
				cfg.Topics["of"] = g.handler
				cfg.Workers = -1 // the loop decides: a blocked handler holds the polls
				cfg.LostRecords = policy
				cfg.DeadLetters = deadLetters(t, c)
			})
			select {
			case <-g.reached:
			case <-time.After(kafkatest.Timeout):
				t.Fatal("the handler never reached offset 10")
			}
			time.Sleep(200 * time.Millisecond) // the client fetches what it will while blocked
			c.DeleteRecords(t, "of", 0, 30)
			close(g.open)

			eventually(t, "a lost range reported", func() bool { return len(in.chk.lostRanges()) > 0 })
			lost := in.chk.lostRanges()
			require.Len(t, lost, 1)
			assert.Equal(t, lostAtFetch, lost[0].Reason)
			assert.Equal(t, int64(30), lost[0].To)
			assert.Greater(t, lost[0].From, int64(10), "offset 10 was fetched before the deletion")
			if policy == LostStop {
				err := in.stop(t)
				require.ErrorIs(t, err, ErrLostRecords)
				assert.LessOrEqual(t, c.Committed(t, group, "of")[0].Offset, lost[0].From)
				return
			}
			waitDecided(t, map[ledger.TopicPartition]int64{p0: 39}, in)
			eventually(t, "committed through the end", func() bool { return c.Committed(t, group, "of")[0].Offset == 40 })
			require.NoError(t, in.stop(t))
			in.chk.verify(t)
			decided := in.chk.decisionsOf(p0)
			for off := range int64(40) {
				_, d := decided[off]
				l := off >= lost[0].From && off < lost[0].To
				assert.True(t, d != l, "offset %d: decided %v, lost %v; exactly one expected", off, d, l)
			}
			assert.Equal(t, int64(40), in.c.Counters().Consumed+in.c.Counters().Lost)
		})
	}
}

// A committed offset past the log end (the log lost its tail, or the topic was made again)
// stops Run under either policy: the records produced at those offsets would be skipped.
func TestKafkaCommittedBeyondTheLogEndStops(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"be": 1}})
	produceEach(t, c, "be", 0, events(0, 5), nil)
	c.Commit(t, "g-be", "be", 0, 50, "")
	in := start(t, "beyond", clientConfig(c, "g-be", ""), newMemory(t), []string{"be"}, nil)
	err := in.waitReturn(t)
	require.ErrorIs(t, err, ErrLostRecords)
	assert.Contains(t, err.Error(), "the log ends at offset 5, below the consumer's position 50")
}

// A compacted topic has gaps between the offsets a fetch returns, after the committed offset:
// none of it is a loss. kfake's compaction moves the log start to the first record it keeps
// (Kafka's leaves it at the first segment's base offset), so offset 0 holds a key of its own
// and the log start stays 0, as in Kafka.
func TestKafkaCompactedGapsAreNotLost(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"dlq.cp": 1}})
	require.NoError(t, c.Cluster.CreateTopic("cp", 1, map[string]string{"cleanup.policy": "compact"}))
	p0 := ledger.TopicPartition{Topic: "cp", Partition: 0}
	key := func(i int) []byte { return []byte{byte('a' + i%4)} }
	produceEach(t, c, "cp", 0, events(0, 1), func(int) []byte { return []byte("first") })
	produceEach(t, c, "cp", 0, events(0, 9), key)
	first := start(t, "first", clientConfig(c, "g-cp", ""), newMemory(t), []string{"cp"}, nil)
	waitDecided(t, map[ledger.TopicPartition]int64{p0: 9}, first)
	require.NoError(t, first.stop(t))

	produceEach(t, c, "cp", 0, events(1, 30), key)
	c.Compact()
	require.Equal(t, int64(0), c.LogStart("cp", 0))
	kept := c.ReadAll(t, "cp")
	require.Less(t, len(kept), 40, "compaction removed records")
	var after []int64
	for _, r := range kept {
		if r.Offset >= 10 {
			after = append(after, r.Offset)
		}
	}
	require.Less(t, len(after), 30, "gaps after the committed offset")
	last := after[len(after)-1]

	again := start(t, "again", clientConfig(c, "g-cp", ""), newMemory(t), []string{"cp"}, func(cfg *Config[string]) {
		cfg.DeadLetters = deadLetters(t, c)
		cfg.LostRecords = LostContinue
	})
	waitDecided(t, map[ledger.TopicPartition]int64{p0: last}, again)
	eventually(t, "committed through the end", func() bool { return c.Committed(t, "g-cp", "cp")[0].Offset == last+1 })
	require.NoError(t, again.stop(t))
	assert.Empty(t, again.chk.lostRanges())
	assert.Zero(t, again.c.Counters().Lost)
	// The checker's G2 check expects every offset below a commit decided, which a gap is not;
	// the decisions are compared with the records kept instead.
	assert.Equal(t, after, slices.Sorted(maps.Keys(again.chk.decisionsOf(p0))), "exactly the records compaction kept")
	assert.NotContains(t, again.logs.String(), "records lost")
}
