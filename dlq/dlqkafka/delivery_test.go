package dlqkafka_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/dlq/dlqkafka"
	"github.com/streamledger/streamledger/internal/kafkatest"
	"github.com/streamledger/streamledger/sink"
)

// TestRejectedDeadLetterNeverReportsSuccess: the broker rejects every produce to the DLQ topic.
// The letter is attempted MaxAttempts times, then reported with an error, never as delivered,
// and nothing is in the topic. Once the broker accepts again the same producer delivers.
func TestRejectedDeadLetterNeverReportsSuccess(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"arrivals": 2, "dlq.arrivals": 2}})
	p := newProducer(t, c, dlqkafka.Config{Retry: sink.RetryPolicy{MaxAttempts: 3}})
	fault := c.FailProduce("dlq.arrivals", -1, kerr.InvalidRecord)

	d := send(t, p, source("arrivals", 1, 7), errors.New("bad"))
	require.Error(t, d.Err)
	require.Equal(t, int64(-1), d.Offset)
	require.Equal(t, 3, d.Attempts)
	var de *dlqkafka.DeliveryError
	require.ErrorAs(t, d.Err, &de)
	require.Equal(t, "dlq.arrivals", de.Topic)
	require.Equal(t, int32(1), de.Partition)
	require.Equal(t, int64(7), de.Source.Offset)
	var ke kafka.Error
	require.ErrorAs(t, d.Err, &ke)
	require.Equal(t, kafka.ErrInvalidRecord, ke.Code())
	require.Contains(t, d.Err.Error(), "arrivals/1@7 not confirmed by dlq.arrivals[1] after 3 attempts")
	require.Equal(t, 3, fault.Hits(), "one produce request per attempt")
	require.Empty(t, c.ReadAll(t, "dlq.arrivals"))

	fault.Remove()
	d = send(t, p, source("arrivals", 1, 8), errors.New("bad"))
	require.NoError(t, d.Err)
	got := c.ReadAll(t, "dlq.arrivals")
	require.Len(t, got, 1)
	require.Equal(t, []byte{0x00, 0xff, 0xfe, '{', 8}, got[0].Value)
}

// TestFailedDeliveryIsRetried: one rejected attempt, then the retry is confirmed, and the topic
// holds the letter once.
func TestFailedDeliveryIsRetried(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"arrivals": 1, "dlq.arrivals": 1}})
	p := newProducer(t, c, dlqkafka.Config{})
	fault := c.FailProduce("dlq.arrivals", 1, nil)

	d := send(t, p, source("arrivals", 0, 3), errors.New("bad"))
	require.NoError(t, d.Err)
	require.Equal(t, 2, d.Attempts)
	require.Equal(t, 1, fault.Hits())
	require.Len(t, c.ReadAll(t, "dlq.arrivals"), 1)
}

// TestBrokerGoneNeverReportsSuccess: the broker dies after the topic is known; every attempt
// times out (message.timeout.ms) and the letter is reported failed.
func TestBrokerGoneNeverReportsSuccess(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"arrivals": 1, "dlq.arrivals": 1}})
	p := newProducer(t, c, dlqkafka.Config{
		Kafka: c.ConfigMap(kafka.ConfigMap{"message.timeout.ms": 300}),
		Retry: sink.RetryPolicy{MaxAttempts: 2},
	})
	require.NoError(t, send(t, p, source("arrivals", 0, 1), errors.New("bad")).Err)

	c.Close()
	d := send(t, p, source("arrivals", 0, 2), errors.New("bad"))
	var ke kafka.Error
	require.ErrorAs(t, d.Err, &ke)
	require.Equal(t, kafka.ErrMsgTimedOut, ke.Code())
	require.Equal(t, 2, d.Attempts)
}

// TestCloseReportsUnconfirmedAsFailed: a letter the broker keeps answering with a retriable error
// is still in flight when Close's deadline passes; it is purged and reported failed.
func TestCloseReportsUnconfirmedAsFailed(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"arrivals": 1, "dlq.arrivals": 1}})
	p := newProducer(t, c, dlqkafka.Config{})
	c.FailProduce("dlq.arrivals", -1, kerr.NotEnoughReplicas)

	var calls atomic.Int32
	ch := make(chan error, 2)
	require.NoError(t, p.Send(context.Background(), source("arrivals", 0, 1), errors.New("bad"), func(err error) {
		calls.Add(1)
		ch <- err
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, p.Close(ctx), context.DeadlineExceeded)
	require.Error(t, <-ch)
	require.Equal(t, int32(1), calls.Load(), "done is called exactly once")

	require.ErrorIs(t, p.Send(context.Background(), source("arrivals", 0, 2), nil, func(error) {}), dlqkafka.ErrClosed)
	require.ErrorIs(t, p.Close(context.Background()), dlqkafka.ErrClosed)
}

// TestOrderWithinPartition: letters sent from one goroutine land in each DLQ partition in the
// order they were sent, so a replay keeps each source partition's order; every done is called
// once.
func TestOrderWithinPartition(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"arrivals": 3, "dlq.arrivals": 3}})
	p := newProducer(t, c, dlqkafka.Config{Kafka: c.ConfigMap(kafka.ConfigMap{"linger.ms": 5})})
	const n = 300
	var ok, failed atomic.Int32
	for i := range n {
		require.NoError(t, p.Send(context.Background(), source("arrivals", int32(i%3), int64(i)), errors.New("bad"), func(err error) {
			if err == nil {
				ok.Add(1)
			} else {
				failed.Add(1)
			}
		}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), kafkatest.Timeout)
	defer cancel()
	require.NoError(t, p.Flush(ctx))
	require.Equal(t, int32(n), ok.Load())
	require.Zero(t, failed.Load())

	got := c.ReadAll(t, "dlq.arrivals")
	require.Len(t, got, n)
	last := map[int32]int64{0: -1, 1: -1, 2: -1}
	for _, m := range got {
		d, err := dlq.Decode(m.Key, m.Value, fromKafkatest(m.Headers))
		require.NoError(t, err)
		require.Equal(t, m.Partition, d.Partition)
		require.Greater(t, d.Offset, last[m.Partition], "source order within partition %d", m.Partition)
		last[m.Partition] = d.Offset
	}
}

// TestConcurrentSends: Send is safe from many goroutines; every done runs exactly once, and
// done functions never run concurrently (the unsynchronized counter would trip the race
// detector).
func TestConcurrentSends(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"arrivals": 4, "dlq.arrivals": 4}})
	p := newProducer(t, c, dlqkafka.Config{})
	c.FailProduce("dlq.arrivals", 2, nil) // some letters need a retry
	const workers, each = 4, 50
	delivered := map[int64]int{} // guarded by done's one-at-a-time contract
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			for i := range each {
				off := int64(w*each + i)
				err := p.Send(context.Background(), source("arrivals", int32(w), off), errors.New("bad"), func(err error) {
					if err == nil {
						delivered[off]++
					}
				})
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		require.NoError(t, <-errs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), kafkatest.Timeout)
	defer cancel()
	require.NoError(t, p.Flush(ctx))
	require.Len(t, delivered, workers*each)
	for off, n := range delivered {
		require.Equal(t, 1, n, "offset %d", off)
	}
	require.Len(t, c.ReadAll(t, "dlq.arrivals"), workers*each)
}
