// Command quickstart keeps 5-minute windows of page load times in Postgres: count, mean, P90,
// max and min per page, exact under redelivery, crashes and rebalances.
package main

import (
	"context"
	"encoding/json"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamledger/streamledger/dlq/dlqkafka"
	"github.com/streamledger/streamledger/ledger/consumer"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/postgres"
)

type pageView struct {
	Page   string    `json:"page"`
	LoadMS float64   `json:"load_ms"`
	At     time.Time `json:"at"`
}

// decode turns one message into its event: a value for the window of its time. An error
// sends the message to the dead-letter topic, dlq.page-views.
func decode(m *kafka.Message) (consumer.Event[string], error) {
	var v pageView
	if err := json.Unmarshal(m.Value, &v); err != nil {
		return consumer.Event[string]{}, err
	}
	return consumer.Event[string]{
		Time:   v.At,
		Values: []consumer.Value[string]{{Value: v.LoadMS, Keys: []string{v.Page}}},
	}, nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	check(err)
	store, err := postgres.New(pool, postgres.Config{Aggregates: sink.AggregateSpec{Table: "page_load"}})
	check(err)
	check(store.Migrate(ctx)) // creates the tables; safe to run on every start

	brokers := os.Getenv("BROKERS")
	dead, err := dlqkafka.NewProducer(dlqkafka.Config{
		Kafka: kafka.ConfigMap{"bootstrap.servers": brokers}, ConsumerID: "quickstart"})
	check(err)
	defer dead.Close(context.Background())

	c, err := consumer.New(consumer.Config[string]{
		Kafka: kafka.ConfigMap{"bootstrap.servers": brokers,
			"group.id": "page-load", "auto.offset.reset": "earliest"},
		Topics:      map[string]consumer.Handler[string]{"page-views": decode},
		Sink:        store,
		Series:      func(page string) sink.Series { return sink.Series{Dimension: "page", DimensionID: page} },
		DeadLetters: dead,
	})
	check(err)
	check(c.Run(ctx)) // until SIGINT or SIGTERM; then writes and commits what is durable
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
