package dlqkafka_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/streamledger/streamledger/dlq/dlqkafka"
	"github.com/streamledger/streamledger/internal/kafkatest"
)

// BenchmarkSend measures dead letters sent and confirmed through librdkafka against the
// in-process broker, most of which is the broker and the loopback network: it shows what the
// producer's own bookkeeping adds, not what a real cluster does.
func BenchmarkSend(b *testing.B) {
	c := kafkatest.Start(b, kafkatest.Config{Topics: map[string]int32{"arrivals": 4, "dlq.arrivals": 4}})
	p, err := dlqkafka.NewProducer(dlqkafka.Config{Kafka: c.ConfigMap(), ConsumerID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = p.Close(context.Background()) }()
	cause := errors.New("bad")
	var failed int
	done := func(err error) {
		if err != nil {
			failed++
		}
	}
	b.ReportAllocs()
	start := time.Now()
	n := 0
	for b.Loop() {
		if err := p.Send(context.Background(), source("arrivals", int32(n%4), int64(n)), cause, done); err != nil {
			b.Fatal(err)
		}
		n++
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	if failed > 0 {
		b.Fatalf("%d letters not delivered", failed)
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(n), "ns/confirmed-letter")
}
