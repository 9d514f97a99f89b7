package pipeline_test

import (
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/streamledger/streamledger/examples/ov/event"
	"github.com/streamledger/streamledger/examples/ov/feed"
	"github.com/streamledger/streamledger/examples/ov/pipeline"
)

// BenchmarkHandlers measures what the processor does per message before the runtime takes
// over: decode, validate and build the event (window keys and state row), on a feed's mix of
// positions and predictions.
func BenchmarkHandlers(b *testing.B) {
	recs, _, err := feed.Generate(feed.Config{Seed: 1, Scale: 0.05, Start: time.Date(2026, 3, 10, 8, 0, 0, 0, feed.CET()),
		Duration: 10 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	dec, err := event.NewDecoder(event.Config{})
	if err != nil {
		b.Fatal(err)
	}
	handlers := pipeline.Handlers(feed.DefaultPositionsTopic, feed.DefaultPredictionsTopic, dec)
	msgs := make([]*kafka.Message, len(recs))
	for i, r := range recs {
		topic := r.Topic
		msgs[i] = &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic}, Key: r.Key, Value: r.Value,
			Timestamp: r.Timestamp, TimestampType: kafka.TimestampCreateTime}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		m := msgs[i%len(msgs)]
		if _, err := handlers[*m.TopicPartition.Topic](m); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i), "ns/event")
}
