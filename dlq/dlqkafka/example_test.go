package dlqkafka_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/dlq/dlqkafka"
)

// A consumer loop dead-letters a message it cannot decode and acks its ledger entry only when
// the delivery report is positive. franz-go's in-process broker stands in for Kafka.
func ExampleProducer_Send() {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "events"))
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()
	p, err := dlqkafka.NewProducer(dlqkafka.Config{
		Kafka:        kafka.ConfigMap{"bootstrap.servers": strings.Join(cluster.ListenAddrs(), ","), "log_level": 0},
		ConsumerID:   "consumer-1",
		CreateTopics: true, // dlq.events, with as many partitions as events
	})
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = p.Close(ctx)
	}()

	topic := "events" // a message that failed to decode, as the consumer received it
	msg := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 1, Offset: 42}, Value: []byte("{not json")}
	cause := errors.New("field delay: expected a number")
	delivered := make(chan error, 1) // read by the consumer loop
	err = p.Send(context.Background(), dlqkafka.RecordFromMessage(msg), cause, func(err error) {
		delivered <- err
	})
	if err != nil {
		log.Fatal(err) // for example a *dlqkafka.TopicError: the offset stays uncommitted
	}
	if err := <-delivered; err == nil {
		fmt.Println("ack", msg.TopicPartition) // ledger.Ack(42): the offset may now be committed
	}
	// Output: ack events[1]@42
}

// A dry run of the replay-dlq command: what would be replayed, grouped by error class. The
// dead-letter topic holds one letter, written as ExampleProducer_Send writes one.
func ExampleReplay() {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "events"))
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()
	brokers := kafka.ConfigMap{"bootstrap.servers": strings.Join(cluster.ListenAddrs(), ","), "log_level": 0}
	deadLetter(brokers, dlq.Record{Topic: "events", Offset: 7, Value: []byte("{not json")}, decodeError("invalid JSON"))

	rep, err := dlqkafka.Replay(context.Background(), dlqkafka.ReplayConfig{
		Kafka:  brokers,
		Topic:  "dlq.events",
		DryRun: true,
		Policy: dlq.Policy{MaxReplays: 3},
		OnEntry: func(e dlqkafka.Entry) {
			fmt.Printf("%d@%d %s %s: %s\n", e.Partition, e.Offset, e.Decision, e.Letter.ErrorClass, e.Letter.ErrorMessage)
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("would replay:", rep.Replayed)
	// Output:
	// 0@0 replay decode.json: invalid JSON
	// would replay: 1
}

// decodeError is a decoder's error; its class groups the dead letters it caused.
type decodeError string

func (e decodeError) Error() string      { return string(e) }
func (e decodeError) ErrorClass() string { return "decode.json" }

// deadLetter writes one dead letter for rec and waits for its delivery.
func deadLetter(brokers kafka.ConfigMap, rec dlq.Record, cause error) {
	p, err := dlqkafka.NewProducer(dlqkafka.Config{Kafka: brokers, ConsumerID: "example", CreateTopics: true})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close(context.Background())
	delivered := make(chan error, 1)
	if err := p.Send(context.Background(), rec, cause, func(err error) { delivered <- err }); err != nil {
		log.Fatal(err)
	}
	if err := <-delivered; err != nil {
		log.Fatal(err)
	}
}
