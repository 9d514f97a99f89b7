package consumer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/dlq/dlqkafka"
	"github.com/streamledger/streamledger/ledger/consumer"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/sinktest"
)

// arrival is what the example's topic carries. The examples of this file take their data from
// the OV example (examples/ov): delays of arrivals, aggregated by line, stop and network.
type arrival struct {
	Vehicle string    `json:"vehicle"`
	Line    string    `json:"line"`
	Stop    string    `json:"stop"`
	DelayS  float64   `json:"delay_s"`
	At      time.Time `json:"at"`
}

// key is a window key: one dimension and one value of it.
type key struct{ dimension, id string }

// decodeArrival is the whole of what a user writes per topic: decoding, and what the event does.
func decodeArrival(m *kafka.Message) (consumer.Event[key], error) {
	var a arrival
	if err := json.Unmarshal(m.Value, &a); err != nil {
		return consumer.Event[key]{}, err // dead-lettered
	}
	return consumer.Event[key]{
		Time: a.At,
		Values: []consumer.Value[key]{{
			Value: a.DelayS,
			Keys:  []key{{"line", a.Line}, {"stop", a.Stop}, {"network", "all"}},
		}},
	}, nil
}

// The minimal wiring: a handler per topic, a sink, the mapping of window keys to rows, and a
// dead-letter producer. Run consumes until interrupted, then writes and commits what is durable;
// a second interrupt aborts the shutdown. (It needs a broker, so it is compiled, not run.)
func Example() {
	store, err := sinktest.NewMemory(sinktest.MemoryConfig{}) // in production: sink/postgres
	if err != nil {
		log.Fatal(err)
	}
	brokers := kafka.ConfigMap{"bootstrap.servers": "localhost:9092"}
	dead, err := dlqkafka.NewProducer(dlqkafka.Config{Kafka: brokers, ConsumerID: "consumer-1", CreateTopics: true})
	if err != nil {
		log.Fatal(err)
	}
	defer dead.Close(context.Background())

	c, err := consumer.New(consumer.Config[key]{
		Kafka: kafka.ConfigMap{
			"bootstrap.servers":             "localhost:9092",
			"group.id":                      "delays",
			"auto.offset.reset":             "earliest",
			"partition.assignment.strategy": "cooperative-sticky",
		},
		Topics:      map[string]consumer.Handler[key]{"arrivals": decodeArrival},
		Sink:        store,
		Series:      func(k key) sink.Series { return sink.Series{Dimension: k.dimension, DimensionID: k.id} },
		DeadLetters: dead,
	})
	if err != nil {
		log.Fatal(err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		again := make(chan os.Signal, 1)
		signal.Notify(again, os.Interrupt)
		<-again
		c.Abort()
	}()
	if err := c.Run(ctx); err != nil {
		log.Fatal(err)
	}
}

// commitLogger is a metrics adapter: it implements only the hooks it needs, and the consumer
// finds them by type assertion.
type commitLogger struct{}

func (commitLogger) OnCommit(ci consumer.CommitInfo) {
	if ci.Err != nil {
		fmt.Println("commit failed:", ci.Err)
	}
}

func (commitLogger) OnPartition(pi consumer.PartitionInfo) {
	fmt.Printf("%v: watermark %s, lag %d, uncommitted %d, open windows %d\n",
		pi.TopicPartition, pi.Watermark.Format(time.TimeOnly), pi.Lag, pi.Pending, pi.OpenWindows)
}

// Observability without a metrics library: hooks are plain values.
func ExampleHook() {
	cfg := consumer.Config[key]{Hooks: []consumer.Hook{commitLogger{}}}
	_, isCommit := cfg.Hooks[0].(consumer.HookCommit)
	_, isMessage := cfg.Hooks[0].(consumer.HookMessage)
	fmt.Println(isCommit, isMessage)
	// Output: true false
}

// Validate is what the runtime checks before applying an event, so that an event is applied
// whole or dead-lettered.
func ExampleEvent_Validate() {
	ev := consumer.Event[key]{Values: []consumer.Value[key]{{Value: 60, Keys: []key{{"line", "22"}}}}}
	fmt.Println(ev.Validate())
	ev.Time = time.Date(2026, 3, 2, 8, 3, 0, 0, time.UTC)
	fmt.Println(ev.Validate())
	// Output:
	// consumer: invalid event: an event with window values needs an event time
	// <nil>
}

// unknownAccount is an effect's refusal that names its dead-letter class.
type unknownAccount struct{ id string }

func (e *unknownAccount) Error() string      { return "account " + e.id + " does not exist" }
func (e *unknownAccount) ErrorClass() string { return "credit.unknown_account" }

// ApplyEffects tells a message's own fault from the infrastructure's by the Outcome of its
// result: a rejected message is dead-lettered with its Err's class, a result with no Outcome
// stops the consumer before the message, and a restart applies it again.
func ExampleConfig_applyEffects() {
	apply := func(ctx context.Context, batch []consumer.Effect) ([]sink.Result, error) {
		res := make([]sink.Result, len(batch))
		for i, e := range batch {
			switch account := e.Value.(string); account {
			case "a1":
				res[i] = sink.Result{Outcome: sink.Applied}
			case "down":
				res[i] = sink.Result{Err: errors.New("ledger service unavailable")}
			default:
				res[i] = sink.Result{Outcome: sink.Rejected, Err: fmt.Errorf("credit c7: %w", &unknownAccount{id: account})}
			}
		}
		return res, nil
	}
	res, err := apply(context.Background(), []consumer.Effect{{Value: "a1"}, {Value: "a9"}, {Value: "down"}})
	if err != nil {
		panic(err)
	}
	// What Run makes of each result.
	for _, r := range res {
		switch r.Outcome {
		case sink.Applied, sink.Duplicate:
			fmt.Println("admitted")
		case sink.Rejected, sink.Conflict:
			fmt.Printf("dead-lettered, class %s: %v\n", dlq.ErrorClass(r.Err), r.Err)
		default:
			fmt.Printf("stops before the message: %v\n", r.Err)
		}
	}
	// Output:
	// admitted
	// dead-lettered, class credit.unknown_account: credit c7: account a9 does not exist
	// stops before the message: ledger service unavailable
}

// A consumer of effects only: no sink, no window keys. The handler decodes each message's
// Effect; ApplyEffects commits a batch of them, one partition's in offset order, in one
// transaction (a marker and the effect of each, for example with sink/postgres Effects.Apply)
// before the runtime records the messages, and their offsets are committed at the next tick.
// Batches of different partitions run concurrently. (It needs a broker, so it is compiled,
// not run.)
func Example_effects() {
	type credit struct {
		ID      string `json:"op_id"`
		Account string `json:"account"`
		Amount  int64  `json:"amount"`
	}
	applyOnce := func(ctx context.Context, cs []credit) ([]sink.Result, error) {
		// In production: one transaction with each operation's marker and credit, such as
		// sink/postgres Effects.Apply, which returns one result per operation.
		res := make([]sink.Result, len(cs))
		for i := range res {
			res[i].Outcome = sink.Applied
		}
		return res, nil
	}
	handle := func(m *kafka.Message) (consumer.Event[struct{}], error) {
		var c credit
		if err := json.Unmarshal(m.Value, &c); err != nil {
			return consumer.Event[struct{}]{}, err // dead-lettered
		}
		return consumer.Event[struct{}]{Effect: c}, nil
	}
	apply := func(ctx context.Context, batch []consumer.Effect) ([]sink.Result, error) {
		cs := make([]credit, len(batch))
		for i, e := range batch {
			cs[i] = e.Value.(credit)
		}
		// An error fails the batch whole: Run stops, and a restart applies it again. A
		// rejected or conflicting result is dead-lettered.
		return applyOnce(ctx, cs)
	}
	brokers := kafka.ConfigMap{"bootstrap.servers": "localhost:9092"}
	dead, err := dlqkafka.NewProducer(dlqkafka.Config{Kafka: brokers, ConsumerID: "credits-1", CreateTopics: true})
	if err != nil {
		log.Fatal(err)
	}
	defer dead.Close(context.Background())
	c, err := consumer.New(consumer.Config[struct{}]{
		Kafka:        kafka.ConfigMap{"bootstrap.servers": "localhost:9092", "group.id": "credits"},
		Topics:       map[string]consumer.Handler[struct{}]{"credits": handle},
		ApplyEffects: apply,
		DeadLetters:  dead,
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := c.Run(ctx); err != nil {
		log.Fatal(err) // after an ErrEffect, a restart runs the failed effect again
	}
}
