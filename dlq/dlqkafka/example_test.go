package dlqkafka_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/dlq/dlqkafka"
)

// A consumer loop dead-letters a message it cannot decode and acks its ledger entry only when the
// delivery report is positive. (Not run: it needs a broker.)
func ExampleProducer_Send() {
	p, err := dlqkafka.NewProducer(dlqkafka.Config{
		Kafka:        kafka.ConfigMap{"bootstrap.servers": "localhost:9092"},
		ProcessorID:  "ov-processor-1",
		CreateTopics: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = p.Close(ctx)
	}()

	delivered := make(chan error, 128) // read by the consumer loop
	var msg *kafka.Message             // a message that failed to decode
	cause := errors.New("field delay: expected a number")
	err = p.Send(context.Background(), dlqkafka.RecordFromMessage(msg), cause, func(err error) {
		delivered <- err
	})
	if err != nil {
		log.Fatal(err) // for example a *dlqkafka.TopicError: the offset stays uncommitted
	}
	if err := <-delivered; err == nil {
		fmt.Println("ack", msg.TopicPartition) // ledger.Ack(offset)
	}
}

// A dry run of the replay-dlq command: what would be replayed, grouped by error class.
// (Not run: it needs a broker.)
func ExampleReplay() {
	rep, err := dlqkafka.Replay(context.Background(), dlqkafka.ReplayConfig{
		Kafka:  kafka.ConfigMap{"bootstrap.servers": "localhost:9092"},
		Topic:  "dlq.arrivals",
		DryRun: true,
		Policy: dlq.Policy{MaxReplays: 3, FailedFrom: time.Now().Add(-24 * time.Hour)},
		OnEntry: func(e dlqkafka.Entry) {
			fmt.Printf("%d@%d %s %s: %s\n", e.Partition, e.Offset, e.Decision, e.Letter.ErrorClass, e.Letter.ErrorMessage)
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	_, _ = rep.WriteTo(os.Stdout)
}
