package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kfake"
)

// broker is the Kafka cluster a command talks to: an in-process kfake cluster, or the one
// named by -brokers.
type broker struct {
	addr    string
	local   *kfake.Cluster
	baseMap kafka.ConfigMap
}

// openBroker starts an in-process cluster when addr is empty.
func openBroker(addr string) (*broker, error) {
	if addr != "" {
		return &broker{addr: addr, baseMap: kafka.ConfigMap{"bootstrap.servers": addr}}, nil
	}
	kc, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		return nil, fmt.Errorf("in-process broker: %w", err)
	}
	b := &broker{local: kc, addr: kc.ListenAddrs()[0]}
	// The in-process broker's connections close when it stops; librdkafka would log each of
	// them. Client errors still reach the service's logger as events.
	b.baseMap = kafka.ConfigMap{"bootstrap.servers": b.addr, "log_level": 2, "log.connection.close": false}
	return b, nil
}

func (b *broker) String() string {
	if b.local != nil {
		return "in-process (kfake) at " + b.addr
	}
	return b.addr
}

func (b *broker) close() {
	if b.local != nil {
		b.local.Close()
	}
}

// config returns the base configuration plus extra.
func (b *broker) config(extra kafka.ConfigMap) kafka.ConfigMap {
	m := kafka.ConfigMap{}
	for k, v := range b.baseMap {
		m[k] = v
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// createTopic creates topic with the given partition count; a topic that exists is fine.
func (b *broker) createTopic(ctx context.Context, topic string, partitions int) error {
	cm := b.config(nil)
	ac, err := kafka.NewAdminClient(&cm)
	if err != nil {
		return err
	}
	defer ac.Close()
	res, err := ac.CreateTopics(ctx, []kafka.TopicSpecification{{Topic: topic, NumPartitions: partitions, ReplicationFactor: 1}})
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	for _, r := range res {
		if r.Error.Code() != kafka.ErrNoError && r.Error.Code() != kafka.ErrTopicAlreadyExists {
			return fmt.Errorf("create topic %s: %w", topic, r.Error)
		}
	}
	return nil
}

// committed returns group's committed offset of topic's partition; ok is false when there is
// none.
func (b *broker) committed(ctx context.Context, group, topic string, partition int32) (offset int64, ok bool, err error) {
	cm := b.config(nil)
	ac, err := kafka.NewAdminClient(&cm)
	if err != nil {
		return 0, false, err
	}
	defer ac.Close()
	res, err := ac.ListConsumerGroupOffsets(ctx, []kafka.ConsumerGroupTopicPartitions{{
		Group: group, Partitions: []kafka.TopicPartition{{Topic: &topic, Partition: partition}},
	}})
	if err != nil {
		return 0, false, fmt.Errorf("committed offsets of %s: %w", group, err)
	}
	for _, g := range res.ConsumerGroupsTopicPartitions {
		for _, tp := range g.Partitions {
			if tp.Error != nil {
				return 0, false, fmt.Errorf("committed offset of %s on %s: %w", group, tp, tp.Error)
			}
			if tp.Offset >= 0 {
				return int64(tp.Offset), true, nil
			}
		}
	}
	return 0, false, nil
}

// record is one message to produce.
type record struct {
	partition int32
	key       string
	value     []byte
}

// produce writes recs in order and waits for each acknowledgement; it returns their offsets.
func (b *broker) produce(ctx context.Context, topic string, recs ...record) ([]int64, error) {
	cm := b.config(kafka.ConfigMap{"enable.idempotence": true, "linger.ms": 0})
	p, err := kafka.NewProducer(&cm)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	reports := make(chan kafka.Event, len(recs))
	offsets := make([]int64, len(recs))
	for i, r := range recs {
		m := &kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: r.partition},
			Key:            []byte(r.key), Value: r.value, Opaque: i,
		}
		if err := p.Produce(m, reports); err != nil {
			return nil, fmt.Errorf("produce to %s: %w", topic, err)
		}
	}
	for range recs {
		select {
		case ev := <-reports:
			m, ok := ev.(*kafka.Message)
			if !ok {
				return nil, fmt.Errorf("produce to %s: unexpected event %v", topic, ev)
			}
			if m.TopicPartition.Error != nil {
				return nil, fmt.Errorf("produce to %s: %w", topic, m.TopicPartition.Error)
			}
			offsets[m.Opaque.(int)] = int64(m.TopicPartition.Offset)
		case <-ctx.Done():
			return nil, errors.Join(fmt.Errorf("produce to %s: not acknowledged", topic), ctx.Err())
		}
	}
	return offsets, nil
}

// waitTimeout bounds the waits of the commands on the broker.
const waitTimeout = 30 * time.Second
