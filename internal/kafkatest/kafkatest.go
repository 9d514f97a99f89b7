package kafkatest

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Config describes the cluster [Start] runs. The zero Config is one broker and no topics.
type Config struct {
	// Brokers is the number of brokers; zero means one.
	Brokers int
	// Topics are created at start, name to partition count.
	Topics map[string]int32
	// AutoCreateTopics lets a metadata request that asks for it create a missing topic (with
	// kfake's default of 10 partitions), as a broker with auto.create.topics.enable=true does.
	// The default is a broker that never creates topics on its own.
	AutoCreateTopics bool
	// Options are passed to kfake.NewCluster after the ones above.
	Options []kfake.Opt
}

// Cluster is a running kfake cluster. Its methods that take a testing.TB fail that test on error.
type Cluster struct {
	*kfake.Cluster
	addrs []string
}

// Timeout bounds every wait of this package (produce, read), so that a broken test fails instead
// of hanging.
const Timeout = 20 * time.Second

// Start runs a cluster for the rest of t; t.Cleanup closes it.
func Start(t testing.TB, cfg Config) *Cluster {
	t.Helper()
	brokers := cfg.Brokers
	if brokers <= 0 {
		brokers = 1
	}
	opts := []kfake.Opt{kfake.NumBrokers(brokers)}
	if cfg.AutoCreateTopics {
		opts = append(opts, kfake.AllowAutoTopicCreation())
	}
	names := make([]string, 0, len(cfg.Topics))
	for name := range cfg.Topics {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		opts = append(opts, kfake.SeedTopics(cfg.Topics[name], name))
	}
	opts = append(opts, cfg.Options...)
	kc, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatalf("kafkatest: start kfake: %v", err)
	}
	t.Cleanup(kc.Close)
	return &Cluster{Cluster: kc, addrs: kc.ListenAddrs()}
}

// Addr is the bootstrap address list, comma separated.
func (c *Cluster) Addr() string { return strings.Join(c.addrs, ",") }

// ConfigMap returns a confluent-kafka-go configuration for this cluster: bootstrap.servers and
// quiet logging, plus extra (later maps win).
func (c *Cluster) ConfigMap(extra ...kafka.ConfigMap) kafka.ConfigMap {
	m := kafka.ConfigMap{"bootstrap.servers": c.Addr()}
	if os.Getenv("KAFKATEST_LOG") == "" {
		// librdkafka logs connection errors to stderr at level 3; the same errors also reach
		// the application as events, which is where tests look at them.
		m["log_level"] = 2
		m["log.connection.close"] = false
	}
	for _, e := range extra {
		for k, v := range e {
			m[k] = v
		}
	}
	return m
}

// CreateTopic creates a topic with the given partition count.
func (c *Cluster) CreateTopic(t testing.TB, topic string, partitions int32) {
	t.Helper()
	if err := c.Cluster.CreateTopic(topic, partitions, nil); err != nil {
		t.Fatalf("kafkatest: create topic %s: %v", topic, err)
	}
}

// Partitions returns the partition count of topic, or 0 if it does not exist.
func (c *Cluster) Partitions(topic string) int { return len(c.PartitionInfos(topic)) }

// Header is one record header; a nil Value is a null value.
type Header struct {
	Key   string
	Value []byte
}

// Record is one Kafka record as this package writes and reads it.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64     // set by ReadAll and Produce
	Timestamp time.Time // zero when producing means now
	Key       []byte
	Value     []byte
	Headers   []Header
}

// FailProduce makes the broker answer the next count produce requests for topic with err
// (count -1: until the handle's Remove). A nil err means INVALID_RECORD, which fails the
// records of the request for good (no client retries it) and leaves the client healthy for the
// next request. Retriable errors (NOT_LEADER_FOR_PARTITION...) make librdkafka retry until
// message.timeout.ms; TOPIC_AUTHORIZATION_FAILED makes it hold the topic's messages until then.
// The handle counts the requests it failed.
func (c *Cluster) FailProduce(topic string, count int, err *kerr.Error) *kfake.FaultHandle {
	if err == nil {
		err = kerr.InvalidRecord
	}
	return c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: topic, Err: err, Count: count})
}

func (c *Cluster) client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.addrs...)}, opts...)...)
	if err != nil {
		t.Fatalf("kafkatest: new client: %v", err)
	}
	return cl
}

// Produce writes recs, each to the partition it names, and waits until the broker has them all.
// It sets each record's Offset.
func (c *Cluster) Produce(t testing.TB, recs ...*Record) {
	t.Helper()
	cl := c.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	krs := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		krs[i] = &kgo.Record{Topic: r.Topic, Partition: r.Partition, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
		for _, h := range r.Headers {
			krs[i].Headers = append(krs[i].Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
	}
	res := cl.ProduceSync(ctx, krs...)
	if err := res.FirstErr(); err != nil {
		t.Fatalf("kafkatest: produce: %v", err)
	}
	// Results come in the order the broker answered, not the order of recs.
	index := make(map[*kgo.Record]int, len(krs))
	for i, kr := range krs {
		index[kr] = i
	}
	for _, r := range res {
		i := index[r.Record]
		recs[i].Offset = r.Record.Offset
		recs[i].Timestamp = r.Record.Timestamp
	}
}

// ReadAll returns every record of topic, by partition then offset, reading each partition from
// its start to its high watermark as of the call. A topic that does not exist fails the test.
func (c *Cluster) ReadAll(t testing.TB, topic string) []Record {
	t.Helper()
	infos := c.PartitionInfos(topic)
	if infos == nil {
		t.Fatalf("kafkatest: read %s: no such topic", topic)
	}
	want := map[int32]int64{}
	start := map[int32]kgo.Offset{}
	for _, pi := range infos {
		if pi.HighWatermark > pi.LogStartOffset {
			want[pi.Partition] = pi.HighWatermark
			start[pi.Partition] = kgo.NewOffset().AtStart()
		}
	}
	if len(want) == 0 {
		return nil
	}
	cl := c.client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: start}))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	var out []Record
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("kafkatest: read %s: still waiting for %v after %s", topic, want, Timeout)
		}
		fs.EachError(func(_ string, p int32, err error) {
			t.Fatalf("kafkatest: read %s partition %d: %v", topic, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			end, ok := want[r.Partition]
			if !ok || r.Offset >= end {
				return
			}
			rec := Record{
				Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp,
				Key: r.Key, Value: r.Value,
			}
			for _, h := range r.Headers {
				rec.Headers = append(rec.Headers, Header{Key: h.Key, Value: h.Value})
			}
			out = append(out, rec)
			if r.Offset+1 >= end {
				delete(want, r.Partition)
			}
		})
	}
	slices.SortStableFunc(out, func(a, b Record) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
	return out
}

// String formats a record for failure messages.
func (r Record) String() string {
	return fmt.Sprintf("%s/%d@%d key=%q value=%q headers=%v", r.Topic, r.Partition, r.Offset, r.Key, r.Value, r.Headers)
}
