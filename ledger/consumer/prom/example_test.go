package prom_test

import (
	"fmt"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/streamledger/streamledger/dlq/dlqkafka"
	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/ledger/consumer"
	"github.com/streamledger/streamledger/ledger/consumer/prom"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/postgres"
)

func Example() {
	reg := prometheus.NewRegistry()
	m, err := prom.New(reg)
	if err != nil {
		panic(err)
	}
	// One line each: the consumer, the sink and the dead-letter producer report to m.
	_ = consumer.Config[string]{Kafka: kafka.ConfigMap{}, Hooks: []consumer.Hook{m}}
	_ = postgres.Config{Hooks: []sink.Hook{m}}
	_ = dlqkafka.Config{Hooks: []dlqkafka.Hook{m}}

	// The consumer calls the hooks; here a late event and a tick are reported by hand.
	m.OnMessage(consumer.MessageInfo{TopicPartition: ledger.TopicPartition{Topic: "events"}, Decision: consumer.Late})
	m.OnTick(consumer.TickInfo{Pending: 1200})
	mfs, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "processor_late_events_total":
			fmt.Println(mf.GetName(), mf.GetMetric()[0].GetCounter().GetValue())
		case "processor_uncommitted_messages":
			fmt.Println(mf.GetName(), mf.GetMetric()[0].GetGauge().GetValue())
		}
	}
	// Output:
	// processor_late_events_total 1
	// processor_uncommitted_messages 1200
}
