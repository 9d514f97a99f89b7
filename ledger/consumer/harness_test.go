package consumer

import (
	"context"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/sink/sinktest"
)

// harness drives a processor without a broker: the test plays the client's part.
type harness struct {
	t     testing.TB
	p     *processor[string]
	cl    *fakeClient
	mem   *sinktest.Memory
	dlq   *fakeDLQ
	clock *fakeClock
	chk   *checker
	logs  *syncBuffer
}

func newHarness(t testing.TB, mod func(*Config[string])) *harness {
	t.Helper()
	h := &harness{t: t, cl: newFakeClient(), mem: newMemory(t), dlq: &fakeDLQ{}, clock: newFakeClock(T0), logs: &syncBuffer{}}
	h.chk = newChecker(h.mem)
	cfg := Config[string]{
		Kafka:             kafka.ConfigMap{"bootstrap.servers": "unused:9092", "group.id": "g"},
		Topics:            map[string]Handler[string]{"t": testHandler, "u": testHandler},
		Sink:              h.mem,
		Keys:              testKeys,
		DeadLetters:       h.dlq,
		IdleTimeout:       -1,
		DeadLetterBackoff: time.Second,
		Clock:             h.clock.Now,
		Logger:            testLogger(h.logs),
		Hooks:             []Hook{h.chk},
	}
	if mod != nil {
		mod(&cfg)
	}
	s, err := cfg.validate()
	require.NoError(t, err)
	h.p = newProcessor(s, h.cl)
	h.p.spawn = func(f func()) { f() } // a tick's writes are done when tick returns
	t.Cleanup(func() {
		if !t.Failed() {
			h.chk.verify(t)
		}
	})
	return h
}

func tp(topic string, partition int32) ledger.TopicPartition {
	return ledger.TopicPartition{Topic: topic, Partition: partition}
}

func (h *harness) assign(tp ledger.TopicPartition, committed int64, metadata string) {
	h.t.Helper()
	require.NoError(h.t, h.p.assign(context.Background(), []assignment{{tp: tp, committed: committed, metadata: metadata}}))
}

func message(tp ledger.TopicPartition, offset int64, payload string) *kafka.Message {
	topic := tp.Topic
	return &kafka.Message{
		TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: tp.Partition, Offset: kafka.Offset(offset)},
		Value:          []byte(payload),
		Key:            []byte("k"),
		Timestamp:      T0,
	}
}

// feed hands payloads to the processor as consecutive offsets from first.
func (h *harness) feed(tp ledger.TopicPartition, first int64, payloads ...string) {
	h.t.Helper()
	for i, pl := range payloads {
		h.p.handle(context.Background(), message(tp, first+int64(i), pl))
	}
	require.NoError(h.t, h.p.fatal)
}

func (h *harness) tick() {
	h.t.Helper()
	h.p.drainReports()
	h.p.resendDue(context.Background())
	h.p.tick(context.Background(), CommitTick)
	require.NoError(h.t, h.p.fatal)
}

func (h *harness) committed(tp ledger.TopicPartition) int64 {
	off, _ := h.cl.committedAt(tp)
	return off
}

func (h *harness) checkpoint(tp ledger.TopicPartition) time.Time {
	h.t.Helper()
	_, md := h.cl.committedAt(tp)
	cp, err := ledger.DecodeMetadata(md)
	require.NoError(h.t, err)
	return cp.Watermark
}

func (h *harness) outcomes(tp ledger.TopicPartition, n int64) []Outcome {
	d := h.chk.decisionsOf(tp)
	out := make([]Outcome, n)
	for i := range out {
		out[i] = d[int64(i)]
	}
	return out
}
