// Package kafkarecord converts a consumed Kafka message to the [dlq.Record] a dead letter
// holds, for the consumer runtime and the dead-letter producer alike (the runtime does not
// import the producer's package). Keys, values and header values are shared, not copied.
package kafkarecord

import (
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/streamledger/streamledger/dlq"
)

// Of converts m; its timestamp is kept only when the broker set one, in UTC.
func Of(m *kafka.Message) dlq.Record {
	r := dlq.Record{Partition: m.TopicPartition.Partition, Offset: int64(m.TopicPartition.Offset), Key: m.Key, Value: m.Value}
	if m.TopicPartition.Topic != nil {
		r.Topic = *m.TopicPartition.Topic
	}
	if m.TimestampType != kafka.TimestampNotAvailable && !m.Timestamp.IsZero() {
		r.Timestamp = m.Timestamp.UTC()
	}
	if len(m.Headers) > 0 {
		r.Headers = make([]dlq.Header, len(m.Headers))
		for i, h := range m.Headers {
			r.Headers[i] = dlq.Header{Key: h.Key, Value: h.Value}
		}
	}
	return r
}
