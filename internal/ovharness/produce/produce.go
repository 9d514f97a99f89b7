package produce

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/streamledger/streamledger/examples/ov/feed"
)

// Producer publishes feed records. Send may be called from one goroutine at a time; Counts
// from any.
type Producer struct {
	p          *kafka.Producer
	partitions map[string]int32
	delivered  atomic.Int64
	failed     atomic.Int64
	firstErr   atomic.Pointer[error]
	done       chan struct{}
	closeOnce  sync.Once
}

// New connects an idempotent producer to brokers and reads the partition counts of topics,
// which must exist. extra holds further librdkafka settings; enable.idempotence, acks and
// retries are the producer's.
func New(ctx context.Context, brokers string, topics []string, extra kafka.ConfigMap) (*Producer, error) {
	cfg := kafka.ConfigMap{
		"bootstrap.servers":                     brokers,
		"enable.idempotence":                    true,
		"acks":                                  "all",
		"linger.ms":                             5,
		"max.in.flight.requests.per.connection": 5,
		"go.delivery.report.fields":             "key",
	}
	for k, v := range extra {
		cfg[k] = v
	}
	kp, err := kafka.NewProducer(&cfg)
	if err != nil {
		return nil, fmt.Errorf("produce: %w", err)
	}
	p := &Producer{p: kp, partitions: map[string]int32{}, done: make(chan struct{})}
	for _, t := range topics {
		n, err := partitionCount(ctx, kp, t)
		if err != nil {
			kp.Close()
			return nil, err
		}
		p.partitions[t] = n
	}
	go p.reports()
	return p, nil
}

func partitionCount(ctx context.Context, kp *kafka.Producer, topic string) (int32, error) {
	for {
		md, err := kp.GetMetadata(&topic, false, 5000)
		if err == nil {
			if tm, ok := md.Topics[topic]; ok && tm.Error.Code() == kafka.ErrNoError && len(tm.Partitions) > 0 {
				return int32(len(tm.Partitions)), nil
			} else if ok && tm.Error.Code() != kafka.ErrNoError && tm.Error.Code() != kafka.ErrLeaderNotAvailable {
				return 0, fmt.Errorf("produce: topic %q: %w (create it first)", topic, tm.Error)
			}
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("produce: topic %q not found: %w", topic, errors.Join(err, ctx.Err()))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (p *Producer) reports() {
	defer close(p.done)
	for ev := range p.p.Events() {
		switch e := ev.(type) {
		case *kafka.Message:
			if e.TopicPartition.Error != nil {
				p.failed.Add(1)
				err := e.TopicPartition.Error
				p.firstErr.CompareAndSwap(nil, &err)
			} else {
				p.delivered.Add(1)
			}
		case kafka.Error:
			if e.IsFatal() {
				err := error(e)
				p.firstErr.CompareAndSwap(nil, &err)
			}
		}
	}
}

// Partitions returns the partition count of topic, 0 if unknown.
func (p *Producer) Partitions(topic string) int32 { return p.partitions[topic] }

// Send queues rec, waiting while the producer's queue is full.
func (p *Producer) Send(ctx context.Context, rec feed.Record) error {
	n := p.partitions[rec.Topic]
	if n == 0 {
		return fmt.Errorf("produce: topic %q was not named when the producer started", rec.Topic)
	}
	topic := rec.Topic
	msg := &kafka.Message{
		TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: feed.Partition(rec.Key, n)},
		Key:            rec.Key,
		Value:          rec.Value,
		Timestamp:      rec.Timestamp,
	}
	for {
		err := p.p.Produce(msg, nil)
		if err == nil {
			return nil
		}
		var kerr kafka.Error
		if !errors.As(err, &kerr) || kerr.Code() != kafka.ErrQueueFull {
			return fmt.Errorf("produce: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Counts returns how many records the broker confirmed and how many failed.
func (p *Producer) Counts() (delivered, failed int64) { return p.delivered.Load(), p.failed.Load() }

// Err returns the first delivery error or fatal client error, if any.
func (p *Producer) Err() error {
	if e := p.firstErr.Load(); e != nil {
		return *e
	}
	return nil
}

// Flush waits until every record sent has been reported, or ctx ends.
func (p *Producer) Flush(ctx context.Context) error {
	for p.p.Len() > 0 {
		p.p.Flush(100)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("produce: %d records unconfirmed: %w", p.p.Len(), err)
		}
	}
	return p.Err()
}

// Close flushes for up to timeout and closes the client.
func (p *Producer) Close(timeout time.Duration) {
	p.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		_ = p.Flush(ctx)
		p.p.Close()
		<-p.done
	})
}
