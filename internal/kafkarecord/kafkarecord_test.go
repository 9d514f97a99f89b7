package kafkarecord_test

import (
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/internal/kafkarecord"
)

func TestOf(t *testing.T) {
	topic := "arrivals"
	at := time.Date(2026, 3, 2, 8, 0, 0, 0, time.FixedZone("CET", 3600))
	for _, tc := range []struct {
		name string
		m    kafka.Message
		want dlq.Record
	}{
		{"everything", kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 2, Offset: 7},
			Key:            []byte("k"), Value: []byte("v"), Timestamp: at, TimestampType: kafka.TimestampCreateTime,
			Headers: []kafka.Header{{Key: "h", Value: []byte("1")}},
		}, dlq.Record{Topic: "arrivals", Partition: 2, Offset: 7, Key: []byte("k"), Value: []byte("v"),
			Timestamp: at.UTC(), Headers: []dlq.Header{{Key: "h", Value: []byte("1")}}}},
		{"no timestamp, no topic", kafka.Message{
			TopicPartition: kafka.TopicPartition{Partition: 0, Offset: 1}, Timestamp: at, TimestampType: kafka.TimestampNotAvailable,
		}, dlq.Record{Offset: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := kafkarecord.Of(&tc.m)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, time.UTC, got.Timestamp.Location())
		})
	}
}
