package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// quiet is the client configuration every client of the benchmark starts from: the in-process
// broker's connections close when it stops, and librdkafka would log each of them.
func quiet(brokers string) kafka.ConfigMap {
	return kafka.ConfigMap{"bootstrap.servers": brokers, "log_level": 2, "log.connection.close": false}
}

// producer writes a feed to a topic and records when each record was handed to the client,
// by partition and offset, for the produce-to-commit latency.
type producer struct {
	p     *kafka.Producer
	topic string
	done  chan struct{}

	mu       sync.Mutex
	err      error
	produced [][]time.Time // by partition, by offset: when Produce was called
}

func newProducer(brokers, topic string, partitions int) (*producer, error) {
	cm := quiet(brokers)
	cm["linger.ms"] = 5
	cm["batch.num.messages"] = 10000
	cm["queue.buffering.max.messages"] = 500000
	cm["go.delivery.report.fields"] = "none"
	p, err := kafka.NewProducer(&cm)
	if err != nil {
		return nil, fmt.Errorf("bench: producer: %w", err)
	}
	pr := &producer{p: p, topic: topic, done: make(chan struct{}), produced: make([][]time.Time, partitions)}
	go pr.reports()
	return pr, nil
}

// reports takes the delivery reports: the offset of each record, or the first error.
func (pr *producer) reports() {
	defer close(pr.done)
	for ev := range pr.p.Events() {
		m, ok := ev.(*kafka.Message)
		if !ok {
			continue
		}
		pr.mu.Lock()
		if err := m.TopicPartition.Error; err != nil {
			pr.err = cmpErr(pr.err, err)
		} else if at, ok := m.Opaque.(time.Time); ok {
			ts := pr.produced[m.TopicPartition.Partition]
			off := int(m.TopicPartition.Offset)
			for len(ts) <= off {
				ts = append(ts, time.Time{})
			}
			ts[off] = at
			pr.produced[m.TopicPartition.Partition] = ts
		}
		pr.mu.Unlock()
	}
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// send hands one message to the client, waiting while its queue is full.
func (pr *producer) send(ctx context.Context, m Message) error {
	msg := &kafka.Message{
		TopicPartition: kafka.TopicPartition{Topic: &pr.topic, Partition: m.Partition},
		Key:            []byte(m.Credit.Account), Value: m.Credit.Payload(), Opaque: time.Now(),
	}
	for {
		err := pr.p.Produce(msg, nil)
		var ke kafka.Error
		if err == nil || !errors.As(err, &ke) || ke.Code() != kafka.ErrQueueFull {
			return err
		}
		pr.p.Flush(1)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// close waits for every delivery report and closes the client.
func (pr *producer) close(ctx context.Context) error {
	for pr.p.Flush(100) > 0 {
		if ctx.Err() != nil {
			return fmt.Errorf("bench: flushing the producer: %w", ctx.Err())
		}
	}
	pr.p.Close()
	<-pr.done
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.err != nil {
		return fmt.Errorf("bench: producing: %w", pr.err)
	}
	return nil
}

// producedAt returns when the record at offset of partition was produced; ok is false when it
// is not known.
func (pr *producer) producedAt(partition int32, offset int64) (time.Time, bool) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	ts := pr.produced[partition]
	if offset < 0 || int(offset) >= len(ts) || ts[offset].IsZero() {
		return time.Time{}, false
	}
	return ts[offset], true
}

// Rate is a number of records consumed in a time.
type Rate struct {
	Records int64
	Seconds float64
	PerSec  float64
}

// consumeRaw polls every record of topic with the same client, doing nothing with them: what
// the client alone achieves.
func consumeRaw(ctx context.Context, brokers, topic string, total int64) (Rate, error) {
	cm := quiet(brokers)
	cm["group.id"], cm["auto.offset.reset"], cm["enable.auto.commit"] = "bench-raw", "earliest", false
	c, err := kafka.NewConsumer(&cm)
	if err != nil {
		return Rate{}, fmt.Errorf("bench: raw consumer: %w", err)
	}
	defer c.Close()
	if err := c.SubscribeTopics([]string{topic}, nil); err != nil {
		return Rate{}, fmt.Errorf("bench: raw consumer: %w", err)
	}
	var (
		n     int64
		first time.Time
	)
	for n < total {
		if err := ctx.Err(); err != nil {
			return Rate{}, err
		}
		switch e := c.Poll(100).(type) {
		case *kafka.Message:
			if e.TopicPartition.Error == nil {
				if n == 0 {
					first = time.Now()
				}
				n++
			}
		case kafka.Error:
			if e.IsFatal() {
				return Rate{}, fmt.Errorf("bench: raw consumer: %w", e)
			}
		}
	}
	d := time.Since(first).Seconds()
	return Rate{Records: n, Seconds: d, PerSec: float64(n) / d}, nil
}
