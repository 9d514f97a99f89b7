package bench

import (
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/streamledger/streamledger/examples/ov/internal/event"
	"github.com/streamledger/streamledger/examples/ov/internal/feed"
	"github.com/streamledger/streamledger/examples/ov/internal/pipeline"
	"github.com/streamledger/streamledger/examples/ov/internal/tables"
	"github.com/streamledger/streamledger/ledger/consumer"
)

// BenchmarkHandlers compares the OV handlers before the profile (former) with the current ones
// on the same messages, keeping each event's state rows as the runtime does until a flush
// (every 20,000 messages here), so that what an event retains weighs as it does in a run.
func BenchmarkHandlers(b *testing.B) {
	recs, _, err := feed.Generate(feed.Config{Seed: 1, Scale: 0.05, Start: DefaultStart(), Duration: 10 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	msgs := make([]*kafka.Message, len(recs))
	for i, r := range recs {
		topic := r.Topic
		msgs[i] = &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic}, Key: r.Key, Value: r.Value,
			Timestamp: r.Timestamp, TimestampType: kafka.TimestampCreateTime}
	}
	dec, err := event.NewDecoder(event.Config{})
	if err != nil {
		b.Fatal(err)
	}
	current := pipeline.Handlers(feed.DefaultPositionsTopic, feed.DefaultPredictionsTopic, dec)
	wrapFormer, err := FormerHandlers()
	if err != nil {
		b.Fatal(err)
	}
	former := map[string]consumer.Handler[tables.Key]{}
	for t, h := range current {
		former[t] = wrapFormer(t, h)
	}
	for _, tc := range []struct {
		name string
		hs   map[string]consumer.Handler[tables.Key]
	}{{"former", former}, {"current", current}} {
		b.Run(tc.name, func(b *testing.B) {
			kept := make([]consumer.StateRow, 0, 20000)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				m := msgs[i%len(msgs)]
				ev, err := tc.hs[*m.TopicPartition.Topic](m)
				if err != nil {
					b.Fatal(err)
				}
				if len(kept) == cap(kept) {
					kept = kept[:0]
				}
				kept = append(kept, ev.State...)
				i++
			}
		})
	}
}
