package dlqkafka_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/dlq/dlqkafka"
	"github.com/streamledger/streamledger/internal/kafkatest"
)

// observed records what the producer reports to its hooks.
type observed struct {
	mu         sync.Mutex
	deliveries []dlqkafka.DeliveryInfo
}

func (o *observed) OnDelivery(i dlqkafka.DeliveryInfo) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.deliveries = append(o.deliveries, i)
}

// TestHooksReportDeliveries: a letter delivered at the second attempt is reported once, with
// where it was written; one whose topic is missing (Send fails, nothing is sent) not at all.
func TestHooksReportDeliveries(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"arrivals": 2, "dlq.arrivals": 2, "positions": 1}})
	o := &observed{}
	p := newProducer(t, c, dlqkafka.Config{Hooks: []dlqkafka.Hook{o}})
	fault := c.FailProduce("dlq.arrivals", 1, nil)

	require.NoError(t, send(t, p, source("arrivals", 1, 7), errors.New("bad")).Err)
	require.Equal(t, 1, fault.Hits())
	err := p.Send(context.Background(), source("positions", 0, 3), errors.New("bad"), func(error) {})
	require.ErrorIs(t, err, dlqkafka.ErrTopicMissing)

	o.mu.Lock()
	defer o.mu.Unlock()
	require.Len(t, o.deliveries, 1, "a refused Send is never delivered")
	d := o.deliveries[0]
	assert.Equal(t, dlqkafka.DeliveryInfo{Source: "arrivals", Topic: "dlq.arrivals", Partition: 1, Attempts: 2, Offset: d.Offset, Latency: d.Latency}, d)
	assert.GreaterOrEqual(t, d.Offset, int64(0), "delivered: the letter's offset")
	assert.Positive(t, d.Latency)
}

func TestHooksRefusedAtNew(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{})
	_, err := dlqkafka.NewProducer(dlqkafka.Config{Kafka: c.ConfigMap(), ConsumerID: "p", Hooks: []dlqkafka.Hook{&observed{}, 42}})
	require.ErrorIs(t, err, dlqkafka.ErrConfig)
	assert.ErrorContains(t, err, "Hooks[1]: int")
}
