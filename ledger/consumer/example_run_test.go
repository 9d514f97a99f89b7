package consumer_test

import (
	"context"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/streamledger/streamledger/ledger/consumer"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/sinktest"
)

// A bounded run, start to finish, on the OV example's data (see arrival). franz-go's
// in-process broker stands in for Kafka and the in-memory sink for Postgres; the wiring is
// the same as against real ones. Run consumes the
// topic up to its end, writes every window that holds data, commits, and returns nil.
func ExampleConsumer_Run() {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "arrivals"))
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()
	brokers := strings.Join(cluster.ListenAddrs(), ",")
	produce(brokers, "arrivals",
		`{"line":"17","stop":"A","delay_s":30,"at":"2026-03-02T07:01:00Z"}`,
		`{"line":"17","stop":"B","delay_s":90,"at":"2026-03-02T07:02:00Z"}`,
		`{"line":"22","stop":"A","delay_s":0,"at":"2026-03-02T07:03:00Z"}`)

	store, err := sinktest.NewMemory(sinktest.MemoryConfig{})
	if err != nil {
		log.Fatal(err)
	}
	c, err := consumer.New(consumer.Config[key]{
		Kafka: kafka.ConfigMap{
			"bootstrap.servers": brokers, "group.id": "example", "auto.offset.reset": "earliest", "log_level": 0,
		},
		Topics: map[string]consumer.Handler[key]{"arrivals": decodeArrival},
		Sink:   store,
		Series: func(k key) sink.Series { return sink.Series{Dimension: k.dimension, DimensionID: k.id} },
		Until:  consumer.Until{End: true}, // stop at the end of the topic as it is at the start
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := c.Run(context.Background()); err != nil {
		log.Fatal(err)
	}
	rows, err := store.Aggregates(context.Background(), time.Date(2026, 3, 2, 7, 0, 0, 0, time.UTC))
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range rows {
		fmt.Printf("%s %s: %d arrivals, mean delay %.0f s\n", r.Dimension, r.DimensionID, r.Count, r.Mean)
	}
	fmt.Println("admitted:", c.Counters().Admitted)
	// Output:
	// line 17: 2 arrivals, mean delay 60 s
	// line 22: 1 arrivals, mean delay 0 s
	// network all: 3 arrivals, mean delay 40 s
	// stop A: 2 arrivals, mean delay 15 s
	// stop B: 1 arrivals, mean delay 90 s
	// admitted: 3
}

// produce writes values to partition 0 of topic and waits for the broker's acknowledgements.
func produce(brokers, topic string, values ...string) {
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": brokers, "log_level": 0})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	acks := make(chan kafka.Event, len(values))
	for _, v := range values {
		msg := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0}, Value: []byte(v)}
		if err := p.Produce(msg, acks); err != nil {
			log.Fatal(err)
		}
	}
	for range values {
		if m := (<-acks).(*kafka.Message); m.TopicPartition.Error != nil {
			log.Fatal(m.TopicPartition.Error)
		}
	}
}
