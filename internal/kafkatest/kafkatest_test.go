package kafkatest_test

import (
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/kafkatest"
)

func TestProduceAndReadAll(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"a": 3, "b": 1}})
	require.Equal(t, 3, c.Partitions("a"))
	require.Equal(t, 0, c.Partitions("missing"))
	require.Empty(t, c.ReadAll(t, "a"))

	ts := time.UnixMilli(1_700_000_000_123)
	recs := []*kafkatest.Record{
		{Topic: "a", Partition: 2, Key: []byte("k2"), Value: []byte{0, 1, 0xff}, Timestamp: ts,
			Headers: []kafkatest.Header{{Key: "h", Value: []byte("v")}, {Key: "null", Value: nil}, {Key: "empty", Value: []byte{}}, {Key: "h", Value: []byte("w")}}},
		{Topic: "a", Partition: 0, Key: nil, Value: []byte("first"), Timestamp: ts},
		{Topic: "a", Partition: 2, Key: []byte("k2"), Value: nil, Timestamp: ts},
		{Topic: "b", Partition: 0, Value: []byte("other topic"), Timestamp: ts},
	}
	c.Produce(t, recs...)
	require.Equal(t, []int64{0, 0, 1, 0}, []int64{recs[0].Offset, recs[1].Offset, recs[2].Offset, recs[3].Offset})

	got := c.ReadAll(t, "a")
	require.Len(t, got, 3)
	require.Equal(t, *recs[1], got[0])
	require.Equal(t, *recs[0], got[1])
	require.Equal(t, *recs[2], got[2])
	require.Nil(t, got[1].Headers[1].Value, "a null header value stays null")
	require.NotNil(t, got[1].Headers[2].Value, "an empty header value stays empty")
	require.Nil(t, got[0].Key)
	require.Nil(t, got[2].Value)

	// Reading again reads the same: no group, no commits.
	require.Equal(t, got, c.ReadAll(t, "a"))
}

func TestConfigMapReachesTheCluster(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"t": 2}})
	p, err := kafka.NewProducer(ptr(c.ConfigMap(kafka.ConfigMap{"linger.ms": 0})))
	require.NoError(t, err)
	defer p.Close()
	topic := "t"
	dr := make(chan kafka.Event, 1)
	require.NoError(t, p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 1}, Value: []byte("x")}, dr))
	m := (<-dr).(*kafka.Message)
	require.NoError(t, m.TopicPartition.Error)
	got := c.ReadAll(t, "t")
	require.Len(t, got, 1)
	require.Equal(t, int32(1), got[0].Partition)
	require.Equal(t, []byte("x"), got[0].Value)
}

func TestConfigMapExtrasWin(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{})
	m := c.ConfigMap(kafka.ConfigMap{"client.id": "x"}, kafka.ConfigMap{"client.id": "y"})
	require.Equal(t, "y", m["client.id"])
	require.Equal(t, c.Addr(), m["bootstrap.servers"])
}

func TestFailProduce(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"t": 1}})
	h := c.FailProduce("t", 1, nil)
	p, err := kafka.NewProducer(ptr(c.ConfigMap()))
	require.NoError(t, err)
	defer p.Close()
	topic := "t"
	dr := make(chan kafka.Event, 1)
	require.NoError(t, p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0}, Value: []byte("x")}, dr))
	m := (<-dr).(*kafka.Message)
	require.ErrorContains(t, m.TopicPartition.Error, "validate record")
	require.Equal(t, 1, h.Hits())
	require.Empty(t, c.ReadAll(t, "t"))

	// The fault was for one request only.
	require.NoError(t, p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0}, Value: []byte("y")}, dr))
	m = (<-dr).(*kafka.Message)
	require.NoError(t, m.TopicPartition.Error)
	require.Len(t, c.ReadAll(t, "t"), 1)
}

func TestAutoCreateTopics(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{AutoCreateTopics: true})
	p, err := kafka.NewProducer(ptr(c.ConfigMap()))
	require.NoError(t, err)
	defer p.Close()
	topic := "new"
	_, err = p.GetMetadata(&topic, false, 5000) // librdkafka's producer asks for auto-creation by default
	require.NoError(t, err)
	require.Equal(t, 10, c.Partitions("new"))

	c2 := kafkatest.Start(t, kafkatest.Config{})
	c2.CreateTopic(t, "made", 4)
	require.Equal(t, 4, c2.Partitions("made"))
}

func ptr[T any](v T) *T { return &v }

func TestCommitAndCommitted(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"t": 3}})
	require.Empty(t, c.Committed(t, "g", "t"))
	c.Commit(t, "g", "t", 1, 42, "meta;data")
	c.Commit(t, "g", "t", 2, 7, "")
	require.Equal(t, map[int32]kafkatest.CommittedOffset{1: {Offset: 42, Metadata: "meta;data"}, 2: {Offset: 7}}, c.Committed(t, "g", "t"))
	require.Empty(t, c.Committed(t, "other", "t"))
}

func TestDeleteRecords(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"d": 1}})
	recs := make([]*kafkatest.Record, 10)
	for i := range recs {
		recs[i] = &kafkatest.Record{Topic: "d", Value: []byte{byte('a' + i)}}
	}
	c.Produce(t, recs...)
	require.Equal(t, int64(0), c.LogStart("d", 0))
	c.DeleteRecords(t, "d", 0, 6)
	require.Equal(t, int64(6), c.LogStart("d", 0))
	got := c.ReadAll(t, "d")
	require.Len(t, got, 4)
	require.Equal(t, int64(6), got[0].Offset)
	require.Equal(t, int64(-1), c.LogStart("missing", 0))
}
