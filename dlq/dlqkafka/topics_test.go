package dlqkafka_test

import (
	"context"
	"errors"
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/dlq/dlqkafka"
	"github.com/streamledger/streamledger/internal/kafkatest"
)

// TestMissingTopicIsAnError: without CreateTopics a missing DLQ topic is an error that names it
// and the partition count to create it with, done is never called, and the topic is not created,
// not even by a broker that would auto-create it on request.
func TestMissingTopicIsAnError(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{AutoCreateTopics: true, Topics: map[string]int32{"clicks": 4}})
	p := newProducer(t, c, dlqkafka.Config{})

	called := false
	err := p.Send(context.Background(), source("clicks", 3, 1), errors.New("bad"), func(error) { called = true })
	require.ErrorIs(t, err, dlqkafka.ErrTopicMissing)
	var te *dlqkafka.TopicError
	require.ErrorAs(t, err, &te)
	require.Equal(t, &dlqkafka.TopicError{Topic: "dlq.clicks", Source: "clicks", SourcePartitions: 4, Err: dlqkafka.ErrTopicMissing}, te)
	require.EqualError(t, err, `dlqkafka: dead-letter topic "dlq.clicks" does not exist: create it with 4 partitions (the partition count of "clicks"), or set Config.CreateTopics`)
	require.Zero(t, c.Partitions("dlq.clicks"), "the broker did not auto-create it")

	// An operator creates it; the next Send uses it.
	c.CreateTopic(t, "dlq.clicks", 4)
	d := send(t, p, source("clicks", 3, 2), errors.New("bad"))
	require.NoError(t, d.Err)
	require.Equal(t, int32(3), d.Partition)
	require.False(t, called)
}

// TestCreatesMissingTopic: with CreateTopics the DLQ topic is created with the source's partition
// count and the configured topic settings, and the letter lands in the source's partition number.
func TestCreatesMissingTopic(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"clicks": 4}})
	p := newProducer(t, c, dlqkafka.Config{
		CreateTopics: true,
		TopicConfig:  map[string]string{"retention.ms": "604800000"},
		Topic:        func(s string) string { return s + ".dead" },
	})
	require.Equal(t, "clicks.dead", p.TopicFor("clicks"))

	d := send(t, p, source("clicks", 3, 9), errors.New("bad"))
	require.NoError(t, d.Err)
	require.Equal(t, "clicks.dead", d.Topic)
	require.Equal(t, 4, c.Partitions("clicks.dead"))
	info := c.TopicInfo("clicks.dead")
	require.NotNil(t, info.Configs["retention.ms"])
	require.Equal(t, "604800000", *info.Configs["retention.ms"])
	got := c.ReadAll(t, "clicks.dead")
	require.Len(t, got, 1)
	require.Equal(t, int32(3), got[0].Partition)

	// A source topic that does not exist has no partition count to copy.
	err := p.Send(context.Background(), source("nowhere", 0, 1), errors.New("bad"), func(error) {})
	require.ErrorIs(t, err, dlqkafka.ErrTopicMissing)
	require.ErrorContains(t, err, `"nowhere.dead" does not exist and could not be created`)
	require.Zero(t, c.Partitions("nowhere.dead"))
}

// TestTooFewPartitions: a DLQ topic smaller than its source cannot keep partition numbers.
func TestTooFewPartitions(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"clicks": 3, "dlq.clicks": 1}})
	p := newProducer(t, c, dlqkafka.Config{CreateTopics: true})
	err := p.Send(context.Background(), source("clicks", 0, 1), errors.New("bad"), func(error) {})
	require.ErrorIs(t, err, dlqkafka.ErrTooFewPartitions)
	require.ErrorContains(t, err, `dead-letter topic "dlq.clicks" has 1 partitions, expected at least 3`)
	require.Equal(t, 1, c.Partitions("dlq.clicks"), "an existing topic is never altered")
}

func TestProducerConfigErrors(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"clicks": 1}})
	for name, cfg := range map[string]dlqkafka.Config{
		"no consumer id":       {Kafka: c.ConfigMap()},
		"no kafka config":      {ConsumerID: "p"},
		"idempotence off":      {ConsumerID: "p", Kafka: c.ConfigMap(kafka.ConfigMap{"enable.idempotence": false})},
		"auto-create on":       {ConsumerID: "p", Kafka: c.ConfigMap(kafka.ConfigMap{"allow.auto.create.topics": true})},
		"negative timeout":     {ConsumerID: "p", Kafka: c.ConfigMap(), MetadataTimeout: -1},
		"negative replication": {ConsumerID: "p", Kafka: c.ConfigMap(), ReplicationFactor: -1},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := dlqkafka.NewProducer(cfg)
			require.ErrorIs(t, err, dlqkafka.ErrConfig)
			require.ErrorContains(t, err, "expected")
		})
	}

	// Setting a forced value to what it is forced to is fine.
	p := newProducer(t, c, dlqkafka.Config{Kafka: c.ConfigMap(kafka.ConfigMap{"enable.idempotence": true}), Topic: func(s string) string { return s }})
	err := p.Send(context.Background(), source("clicks", 0, 1), errors.New("bad"), func(error) {})
	require.ErrorIs(t, err, dlqkafka.ErrConfig, "a topic mapped to itself")
	require.ErrorIs(t, p.Send(context.Background(), source("clicks", 0, 1), nil, nil), dlqkafka.ErrConfig, "nil done")

	bad := newProducer(t, c, dlqkafka.Config{Topic: func(s string) string { return "dlq/" + s }})
	require.ErrorIs(t, bad.Send(context.Background(), source("clicks", 0, 1), nil, func(error) {}), dlq.ErrInvalid)
	require.ErrorIs(t, bad.Send(context.Background(), dlq.Record{Topic: "clicks", Offset: -5}, nil, func(error) {}), dlq.ErrInvalid)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, bad.Send(ctx, source("clicks", 0, 1), nil, func(error) {}), context.Canceled)
}
