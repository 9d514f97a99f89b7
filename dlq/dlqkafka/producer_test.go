package dlqkafka_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/dlq/dlqkafka"
	"github.com/streamledger/streamledger/internal/kafkatest"
)

var (
	t0       = time.Date(2024, 3, 5, 7, 42, 13, 123_000_000, time.UTC)
	origTime = time.Date(2024, 3, 5, 7, 41, 0, 250_000_000, time.UTC)
)

type schemaError struct{ field string }

func (e *schemaError) Error() string      { return "field " + e.field + ": expected a number" }
func (e *schemaError) ErrorClass() string { return "schema" }

// fixedClock returns t0, t0+1s, t0+2s... so that every letter's time of failure is known.
func fixedClock() func() time.Time {
	var mu sync.Mutex
	n := 0
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		n++
		return t0.Add(time.Duration(n-1) * time.Second)
	}
}

func newProducer(t *testing.T, c *kafkatest.Cluster, cfg dlqkafka.Config) *dlqkafka.Producer {
	t.Helper()
	if cfg.Kafka == nil {
		cfg.Kafka = c.ConfigMap()
	}
	if cfg.ConsumerID == "" {
		cfg.ConsumerID = "proc-1"
	}
	if cfg.Clock == nil {
		cfg.Clock = fixedClock()
	}
	if cfg.Retry.InitialBackoff == 0 {
		cfg.Retry.InitialBackoff = 10 * time.Millisecond
	}
	last := &lastDelivery{}
	cfg.Hooks = append(cfg.Hooks, last)
	p, err := dlqkafka.NewProducer(cfg)
	require.NoError(t, err)
	lastDeliveries.Store(p, last)
	t.Cleanup(func() {
		_ = p.Close(context.Background())
		lastDeliveries.Delete(p)
	})
	return p
}

// lastDeliveries maps each producer of newProducer to its lastDelivery hook.
var lastDeliveries sync.Map

// lastDelivery records the latest delivery a producer reported to its hooks.
type lastDelivery struct {
	mu sync.Mutex
	d  dlqkafka.DeliveryInfo
}

func (l *lastDelivery) OnDelivery(d dlqkafka.DeliveryInfo) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.d = d
}

// delivery is a letter's outcome: what the hooks saw of it, and Err, what done received.
type delivery struct {
	dlqkafka.DeliveryInfo
	Err error
}

// send dead-letters rec, waits for its delivery and returns it.
func send(t *testing.T, p *dlqkafka.Producer, rec dlq.Record, cause error) delivery {
	t.Helper()
	ch := make(chan error, 1)
	require.NoError(t, p.Send(context.Background(), rec, cause, func(err error) { ch <- err }))
	select {
	case err := <-ch:
		l, _ := lastDeliveries.Load(p)
		last := l.(*lastDelivery)
		last.mu.Lock()
		defer last.mu.Unlock()
		require.Equal(t, err == nil, last.d.Offset >= 0, "the hooks see the letter written only when done sees it delivered")
		return delivery{last.d, err}
	case <-time.After(kafkatest.Timeout):
		t.Fatalf("no delivery for %s after %s", rec, kafkatest.Timeout)
		return delivery{}
	}
}

func source(topic string, partition int32, offset int64) dlq.Record {
	return dlq.Record{
		Topic: topic, Partition: partition, Offset: offset, Timestamp: origTime,
		Key:   []byte("key-" + strconv.Itoa(int(partition))),
		Value: []byte{0x00, 0xff, 0xfe, '{', byte(offset)},
		Headers: []dlq.Header{
			{Key: "trace", Value: []byte("t-" + strconv.FormatInt(offset, 10))},
			{Key: "null", Value: nil},
			{Key: "empty", Value: []byte{}},
			{Key: "trace", Value: []byte("second")},
		},
	}
}

func toKafkatest(hs []dlq.Header) []kafkatest.Header {
	out := make([]kafkatest.Header, len(hs))
	for i, h := range hs {
		out[i] = kafkatest.Header{Key: h.Key, Value: h.Value}
	}
	return out
}

func fromKafkatest(hs []kafkatest.Header) []dlq.Header {
	out := make([]dlq.Header, len(hs))
	for i, h := range hs {
		out[i] = dlq.Header{Key: h.Key, Value: h.Value}
	}
	return out
}

// TestDeadLetterBytesHeadersAndPartition writes one letter per source partition and reads them
// back with an independent client: same partition number, exact key and value bytes, original
// headers first and in order (null and empty values kept apart), then the reserved headers.
func TestDeadLetterBytesHeadersAndPartition(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"arrivals": 3, "dlq.arrivals": 3}})
	p := newProducer(t, c, dlqkafka.Config{ConsumerID: "ov-7"})

	var recs []dlq.Record
	for part := int32(2); part >= 0; part-- {
		rec := source("arrivals", part, 40+int64(part))
		recs = append(recs, rec)
		d := send(t, p, rec, fmt.Errorf("decode: %w", &schemaError{"delay"}))
		require.NoError(t, d.Err)
		require.Equal(t, "dlq.arrivals", d.Topic)
		require.Equal(t, part, d.Partition)
		require.Equal(t, int64(0), d.Offset)
		require.Equal(t, 1, d.Attempts)
	}

	got := c.ReadAll(t, "dlq.arrivals")
	require.Len(t, got, 3)
	for i, rec := range recs {
		m := got[2-i] // ReadAll sorts by partition
		require.Equal(t, rec.Partition, m.Partition, "same partition number as the source")
		require.Equal(t, rec.Key, m.Key)
		require.Equal(t, rec.Value, m.Value)
		require.Equal(t, t0.Add(time.Duration(i)*time.Second), m.Timestamp.UTC(), "the letter's timestamp is its time of failure")

		want := append(toKafkatest(rec.Headers),
			kafkatest.Header{Key: dlq.HeaderVersion, Value: []byte("1")},
			kafkatest.Header{Key: dlq.HeaderTopic, Value: []byte("arrivals")},
			kafkatest.Header{Key: dlq.HeaderPartition, Value: []byte(strconv.Itoa(int(rec.Partition)))},
			kafkatest.Header{Key: dlq.HeaderOffset, Value: []byte(strconv.FormatInt(rec.Offset, 10))},
			kafkatest.Header{Key: dlq.HeaderTimestamp, Value: []byte("2024-03-05T07:41:00.25Z")},
			kafkatest.Header{Key: dlq.HeaderErrorClass, Value: []byte("schema")},
			kafkatest.Header{Key: dlq.HeaderErrorMessage, Value: []byte("decode: field delay: expected a number")},
			kafkatest.Header{Key: dlq.HeaderConsumer, Value: []byte("ov-7")},
			kafkatest.Header{Key: dlq.HeaderFailedAt, Value: []byte(t0.Add(time.Duration(i) * time.Second).Format(time.RFC3339Nano))},
		)
		require.Equal(t, want, m.Headers)
		require.Nil(t, m.Headers[1].Value, "null header value stays null")
		require.NotNil(t, m.Headers[2].Value, "empty header value stays empty")

		back, err := dlq.Decode(m.Key, m.Value, fromKafkatest(m.Headers))
		require.NoError(t, err)
		require.Equal(t, rec, back.Record)
		require.Equal(t, "schema", back.ErrorClass)
		require.Equal(t, "ov-7", back.ConsumerID)
	}
}

// TestDeadLetterTypeNameClassAndNullKey covers the fallback class (the Go type of the cause) and
// a message with a null key and value (a tombstone that failed).
func TestDeadLetterTypeNameClassAndNullKey(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"positions": 1, "dlq.positions": 1}})
	p := newProducer(t, c, dlqkafka.Config{MaxErrorMessage: 10})
	_, cause := strconv.Atoi("soon")
	d := send(t, p, dlq.Record{Topic: "positions", Offset: 5}, cause)
	require.NoError(t, d.Err)
	got := c.ReadAll(t, "dlq.positions")
	require.Len(t, got, 1)
	require.Nil(t, got[0].Key)
	require.Nil(t, got[0].Value)
	back, err := dlq.Decode(got[0].Key, got[0].Value, fromKafkatest(got[0].Headers))
	require.NoError(t, err)
	require.Equal(t, "*strconv.NumError", back.ErrorClass)
	require.Equal(t, "strconv...", back.ErrorMessage, "truncated to MaxErrorMessage bytes")
	require.True(t, back.Timestamp.IsZero())
}

// A dead-letter cluster that does not answer costs one lookup per source topic and backoff:
// the next Send fails at once with the same error instead of waiting on the cluster again.
func TestUnreachableClusterFailsFastAfterOneLookup(t *testing.T) {
	p, err := dlqkafka.NewProducer(dlqkafka.Config{
		Kafka:      kafka.ConfigMap{"bootstrap.servers": "127.0.0.1:1", "log_level": 0},
		ConsumerID: "p", MetadataTimeout: 200 * time.Millisecond,
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = p.Close(ctx)
	})
	done := func(error) { t.Error("no delivery is expected") }
	start := time.Now()
	first := p.Send(context.Background(), source("orders", 0, 1), errors.New("bad"), done)
	require.Error(t, first)
	assert.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond, "the first lookup waited for the cluster")
	start = time.Now()
	second := p.Send(context.Background(), source("orders", 0, 2), errors.New("bad"), done)
	assert.Less(t, time.Since(start), 50*time.Millisecond, "the next one did not")
	assert.Equal(t, first.Error(), second.Error())
}
