package consumer

import (
	"context"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/sinktest"
)

// harness drives a processor without a broker: the test plays the client's part.
type harness struct {
	t     testing.TB
	ctx   context.Context
	abort context.CancelFunc // cancels the context of effects and dead-letter sends, as Abort does
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
		Kafka:       kafka.ConfigMap{"bootstrap.servers": "unused:9092", "group.id": "g", "auto.offset.reset": "earliest"},
		Topics:      map[string]Handler[string]{"t": testHandler, "u": testHandler},
		Sink:        h.mem,
		Series:      testKeys,
		DeadLetters: h.dlq,
		IdleTimeout: -1,
		Clock:       h.clock.Now,
		Logger:      testLogger(h.logs),
		Hooks:       []Hook{h.chk},
	}
	if mod != nil {
		mod(&cfg)
	}
	s, err := cfg.validate()
	require.NoError(t, err)
	h.p, err = newProcessor(s, h.cl)
	require.NoError(t, err)
	h.p.spawn = func(f func()) { f() } // a tick's writes are done when tick returns
	h.ctx, h.abort = context.WithCancel(context.Background())
	h.p.startWorkers(h.ctx)
	t.Cleanup(func() {
		h.p.stopWorkers()
		h.abort()
		if !t.Failed() {
			h.chk.verify(t)
		}
	})
	return h
}

// handle dispatches one message and waits until it is decided, as the next tick would.
func (p *processor[K]) handle(m *kafka.Message) {
	p.dispatch(m)
	p.barrier()
}

// tables returns the state tables the job flushes, in order.
func (job *writeJob[K]) tables() []string {
	var out []string
	for _, w := range job.states {
		out = append(out, w.table)
	}
	return out
}

// rowsOf returns the rows the job flushes into table.
func (job *writeJob[K]) rowsOf(table string) []sink.StateRow {
	for _, w := range job.states {
		if w.table == table {
			return w.rows
		}
	}
	return nil
}

// bufferedRows counts the state rows buffered for the next flush. Call it at a barrier.
func (p *processor[K]) bufferedRows() int {
	n := 0
	for _, rows := range p.stateRetry {
		n += len(rows)
	}
	for _, pt := range p.order {
		for t := range pt.state.tables {
			n += pt.state.len(t)
		}
	}
	return n
}

func tp(topic string, partition int32) ledger.TopicPartition {
	return ledger.TopicPartition{Topic: topic, Partition: partition}
}

func (h *harness) assign(tp ledger.TopicPartition, committed int64, metadata string) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), h.p.s.AssignTimeout)
	defer cancel()
	require.NoError(h.t, h.p.assign(ctx, []assignment{{tp: tp, committed: committed, metadata: metadata}}, nil))
}

// closes returns the close batches the sink took, registrations left out.
func (h *harness) closes() []sink.CloseBatch {
	var out []sink.CloseBatch
	for _, b := range h.mem.Closes() {
		if !registration(b) {
			out = append(out, b)
		}
	}
	return out
}

// registration reports whether b only registers its partition.
func registration(b sink.CloseBatch) bool {
	return b.ClosedThrough.IsZero() && !b.Empty && len(b.Partials) == 0
}

// registrations reports whether every batch of bs only registers its partition.
func registrations(bs []sink.CloseBatch) bool {
	for _, b := range bs {
		if !registration(b) {
			return false
		}
	}
	return len(bs) > 0
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
		h.p.handle(message(tp, first+int64(i), pl))
	}
	require.NoError(h.t, h.p.fatal())
}

func (h *harness) tick() {
	h.t.Helper()
	h.p.drainReports()
	h.p.resendDue(context.Background())
	h.p.tick(context.Background(), CommitTick)
	require.NoError(h.t, h.p.fatal())
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

func (h *harness) outcomes(tp ledger.TopicPartition, n int64) []Decision {
	d := h.chk.decisionsOf(tp)
	out := make([]Decision, n)
	for i := range out {
		out[i] = d[int64(i)]
	}
	return out
}
