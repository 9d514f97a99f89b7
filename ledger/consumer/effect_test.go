package consumer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/internal/kafkatest"
	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/sink"
)

// applied is the result of a batch of n effects, all applied.
func applied(n int) []sink.Result {
	res := make([]sink.Result, n)
	for i := range res {
		res[i].Outcome = sink.Applied
	}
	return res
}

// effects is a toy effect target: payloads "e <id>" apply id, "d <id>" find it applied
// before, "r <id>" are refused by the effect, "k <id>" conflict with an earlier operation of
// the same id, "f <id>" fail for a reason of the infrastructure while down is set, "a <id>"
// abort the consumer from inside the batch, and anything else is the test handler's. A batch
// fails whole while batchDown is set, and returns one result too few while short is set. It records every effect handed to ApplyEffects, in order,
// with the ledger's last added offset at that moment (the batch must be applied before its
// messages enter the ledger), and the size of every batch.
type effects struct {
	mu        sync.Mutex
	runs      []string
	batches   []int
	down      bool
	batchDown bool
	short     bool
	abort     func() // called by "a <id>" effects: Abort from inside a batch
	lastAdd   func(ledger.TopicPartition) int64
}

var errOutage = errors.New("database unavailable (test)")

type refusedError struct{ id string }

func (e *refusedError) Error() string      { return fmt.Sprintf("%s refused", e.id) }
func (e *refusedError) ErrorClass() string { return "test.refused" }

// fxValue is the Effect of a toy message.
type fxValue struct{ kind, id string }

func (fx *effects) handler(m *kafka.Message) (Event[string], error) {
	kind, id, _ := strings.Cut(string(m.Value), " ")
	switch kind {
	case "e", "d", "r", "k", "f", "a":
		return Event[string]{Effect: fxValue{kind: kind, id: id}}, nil
	}
	return testHandler(m)
}

func (fx *effects) apply(ctx context.Context, batch []Effect) ([]sink.Result, error) {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	fx.batches = append(fx.batches, len(batch))
	for _, e := range batch {
		m := e.Message
		tp := ledger.TopicPartition{Topic: *m.TopicPartition.Topic, Partition: m.TopicPartition.Partition}
		v := e.Value.(fxValue)
		fx.runs = append(fx.runs, fmt.Sprintf("%s@%d(last added %d)", v.id, m.TopicPartition.Offset, fx.lastAdd(tp)))
	}
	if fx.batchDown {
		return nil, fmt.Errorf("applying a batch: %w", errOutage)
	}
	res := make([]sink.Result, len(batch))
	for i := range batch {
		res[i].Outcome = sink.Applied
		switch v := batch[i].Value.(fxValue); v.kind {
		case "d":
			res[i].Outcome = sink.Duplicate
		case "r":
			res[i] = sink.Result{Outcome: sink.Rejected, Err: fmt.Errorf("credit: %w", &refusedError{id: v.id})}
		case "k":
			res[i] = sink.Result{Outcome: sink.Conflict, Err: &sink.ConflictError{ID: v.id}}
		case "f":
			if fx.down {
				res[i] = sink.Result{Err: fmt.Errorf("applying %s: %w", v.id, errOutage)}
			}
		case "a":
			fx.abort()
			return nil, ctx.Err()
		}
	}
	if fx.short {
		res = res[1:]
	}
	return res, nil
}

func (fx *effects) ran() []string {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	return append([]string(nil), fx.runs...)
}

func (fx *effects) sizes() []int {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	return append([]int(nil), fx.batches...)
}

func newEffectHarness(t *testing.T, mod func(*Config[string])) (*harness, *effects) {
	fx := &effects{}
	h := newHarness(t, func(c *Config[string]) {
		c.Topics = map[string]Handler[string]{"t": fx.handler}
		c.ApplyEffects = fx.apply
		if mod != nil {
			mod(c)
		}
	})
	fx.lastAdd = func(tp ledger.TopicPartition) int64 { return h.p.parts[tp].led.LastAdded() }
	return h, fx
}

// feedChunk hands payloads to the processor as consecutive offsets from first, all before the
// barrier: one chunk, as when the client had them at hand.
func (h *harness) feedChunk(tp ledger.TopicPartition, first int64, payloads ...string) {
	h.t.Helper()
	for i, pl := range payloads {
		h.p.dispatch(message(tp, first+int64(i), pl))
	}
	h.p.barrier()
}

// An effect runs once per delivery, before its message enters the ledger; its entry is durable
// at once, so the offset is committed at the next tick and not before. A redelivery runs it
// again (recognising its earlier success is the effect's own business: its marker).
func TestEffectRunsOncePerDeliveryAndCommitsAtTheNextTick(t *testing.T) {
	for _, withSink := range []bool{true, false} {
		t.Run(fmt.Sprintf("sink=%v", withSink), func(t *testing.T) {
			h, fx := newEffectHarness(t, func(c *Config[string]) {
				if !withSink {
					c.Sink, c.Series = nil, nil
				}
			})
			p0 := tp("t", 0)
			h.assign(p0, -1, "")
			h.feed(p0, 0, "e a", "e b")
			assert.Equal(t, []string{"a@0(last added -1)", "b@1(last added 0)"}, fx.ran())
			assert.Equal(t, int64(-1), h.committed(p0), "committed at the tick, not before")
			h.tick()
			assert.Equal(t, int64(2), h.committed(p0))

			c := h.p.counters.snapshot()
			assert.Equal(t, Counters{Consumed: 2, Admitted: 2, Effects: 2, Commits: 1}, c)
			for _, m := range h.chk.history {
				assert.True(t, m.Effect, "offset %d reported as an effect", m.Offset)
				assert.Equal(t, Admitted, m.Decision)
				assert.Equal(t, ledger.Condition{}, m.Condition, "durable at once")
			}

			// Redelivered from offset 1 to a new assignment: run again, once.
			h.p.revoke(context.Background(), []ledger.TopicPartition{p0}, false, CommitRevoke)
			h.assign(p0, 1, "")
			h.feed(p0, 1, "e b", "e c")
			h.feed(p0, 2, "e c") // fetched again after a seek: decided already
			assert.Equal(t, []string{"a@0(last added -1)", "b@1(last added 0)", "b@1(last added -1)", "c@2(last added 1)"}, fx.ran())
			h.tick()
			assert.Equal(t, int64(3), h.committed(p0))
		})
	}
}

// The effects of a chunk go to ApplyEffects in batches of at most EffectBatch, in offset
// order, each before any of its messages enters the ledger; messages without an effect and
// dead letters between them are decided in offset order with the rest. Batches never span
// two partitions.
func TestEffectsAreAppliedInBatches(t *testing.T) {
	for _, tc := range []struct {
		batch int
		sizes []int
		runs  []string
	}{
		{batch: 0, sizes: []int{4, 1}, runs: []string{"a@0(last added -1)", "b@2(last added -1)", "c@4(last added -1)", "d@5(last added -1)", "x@0(last added -1)"}},
		{batch: 3, sizes: []int{3, 1, 1}, runs: []string{"a@0(last added -1)", "b@2(last added -1)", "c@4(last added -1)", "d@5(last added 4)", "x@0(last added -1)"}},
		{batch: -1, sizes: []int{1, 1, 1, 1, 1}, runs: []string{"a@0(last added -1)", "b@2(last added 1)", "c@4(last added 3)", "d@5(last added 4)", "x@0(last added -1)"}},
	} {
		t.Run(fmt.Sprintf("EffectBatch=%d", tc.batch), func(t *testing.T) {
			h, fx := newEffectHarness(t, func(c *Config[string]) { c.EffectBatch = tc.batch })
			p0, p1 := tp("t", 0), tp("t", 1)
			h.assign(p0, -1, "")
			h.assign(p1, -1, "")
			h.feedChunk(p0, 0, "e a", "c 0:10", "e b", "x bad", "e c", "e d")
			h.feedChunk(p1, 0, "e x")
			require.NoError(t, h.p.fatal())
			assert.Equal(t, tc.runs, fx.ran())
			assert.Equal(t, tc.sizes, fx.sizes())
			assert.Equal(t, []Decision{Admitted, Admitted, Admitted, DeadLettered, Admitted, Admitted}, h.outcomes(p0, 6))
			assert.Equal(t, int64(5), h.p.counters.snapshot().Effects)
		})
	}
}

// An effect that refuses its message sends it to the dead-letter topic, with the refusal's
// class, while the rest of its batch is admitted; the offset passes it only once the letter's
// delivery is confirmed.
func TestEffectRejectionIsDeadLettered(t *testing.T) {
	h, fx := newEffectHarness(t, nil)
	p0 := tp("t", 0)
	h.assign(p0, -1, "")
	h.feedChunk(p0, 0, "e a", "r b", "e c")
	assert.Equal(t, []Decision{Admitted, DeadLettered, Admitted}, h.outcomes(p0, 3))
	assert.Len(t, fx.ran(), 3)
	assert.Equal(t, []int{3}, fx.sizes(), "one batch")
	require.Equal(t, 1, h.dlq.count())
	letter := h.dlq.sent[0]
	assert.Equal(t, int64(1), letter.rec.Offset)
	assert.Equal(t, []byte("r b"), letter.rec.Value)
	assert.Equal(t, "test.refused", dlq.ErrorClass(letter.cause))
	assert.Equal(t, "credit: b refused", letter.cause.Error(), "the refusal's own message")
	var refused *refusedError
	assert.ErrorAs(t, letter.cause, &refused)

	h.tick()
	assert.Equal(t, int64(1), h.committed(p0), "the letter is not confirmed yet")
	h.dlq.deliver(0, errors.New("broker said no"))
	h.tick()
	assert.Equal(t, int64(1), h.committed(p0), "a failed delivery is never acked")
	h.clock.Advance(h.p.s.deadLetterRetry.InitialBackoff)
	h.tick()
	require.Equal(t, 2, h.dlq.count(), "sent again after the backoff")
	h.dlq.deliver(1, nil)
	h.tick()
	assert.Equal(t, int64(3), h.committed(p0))
	c := h.p.counters.snapshot()
	assert.Equal(t, int64(2), c.Effects)
	assert.Equal(t, int64(1), c.DeadLettered)
	assert.Equal(t, c.Consumed, c.Admitted+c.Late+c.DeadLettered)
}

// Each Outcome of an effect's result decides its message: applied or a duplicate of an earlier
// delivery is admitted as an effect, rejected or conflicting is dead-lettered with the
// result's Err as its cause. Every message ends admitted or in the dead-letter topic.
func TestEffectOutcomesDecideTheMessage(t *testing.T) {
	h, _ := newEffectHarness(t, nil)
	p0 := tp("t", 0)
	h.assign(p0, -1, "")
	h.feedChunk(p0, 0, "e a", "d b", "r c", "k d")
	require.NoError(t, h.p.halted())
	assert.Equal(t, []Decision{Admitted, Admitted, DeadLettered, DeadLettered}, h.outcomes(p0, 4))
	require.Equal(t, 2, h.dlq.count())
	var conflict *sink.ConflictError
	require.ErrorAs(t, h.dlq.sent[1].cause, &conflict)
	assert.Equal(t, "d", conflict.ID)
	h.dlq.deliver(0, nil)
	h.dlq.deliver(1, nil)
	h.tick()
	assert.Equal(t, int64(4), h.committed(p0))
	c := h.p.counters.snapshot()
	assert.Equal(t, [4]int64{4, 2, 2, 2}, [4]int64{c.Consumed, c.Admitted, c.DeadLettered, c.Effects},
		"consumed, admitted, dead-lettered, effects")
}

// A rejection without a reason is still the message's fault: dead-lettered, with a cause that
// names the outcome.
func TestEffectRejectionWithoutAReason(t *testing.T) {
	h := newHarness(t, func(c *Config[string]) {
		c.Topics = map[string]Handler[string]{"t": func(m *kafka.Message) (Event[string], error) {
			return Event[string]{Effect: string(m.Value)}, nil
		}}
		c.ApplyEffects = func(_ context.Context, batch []Effect) ([]sink.Result, error) {
			return []sink.Result{{Outcome: sink.Conflict}}, nil
		}
	})
	p0 := tp("t", 0)
	h.assign(p0, -1, "")
	h.feed(p0, 0, "x")
	require.NoError(t, h.p.halted())
	assert.Equal(t, []Decision{DeadLettered}, h.outcomes(p0, 1))
	require.Equal(t, 1, h.dlq.count())
	assert.EqualError(t, h.dlq.sent[0].cause, "consumer: effect conflict, with no reason given")
}

// ApplyEffects returning a result count other than its batch's fails the batch whole: nothing
// of it is decided, and Run stops.
func TestEffectResultCountMismatchFailsTheBatch(t *testing.T) {
	h, fx := newEffectHarness(t, nil)
	fx.short = true
	p0 := tp("t", 0)
	h.assign(p0, -1, "")
	h.feedChunk(p0, 0, "e a", "e b")
	require.ErrorIs(t, h.p.halted(), ErrEffect)
	assert.Contains(t, h.p.halted().Error(), "returned 1 results for a batch of 2 effects")
	assert.Equal(t, Counters{}, h.p.counters.snapshot(), "nothing decided")
}

// Any other failure of an effect stops the consumer before the message is recorded: nothing
// at or past it is decided or committed (what was durable before it is), and a restart from
// the committed offset runs it again.
func TestEffectFailureStopsBeforeTheMessage(t *testing.T) {
	h, fx := newEffectHarness(t, nil)
	p0, p1 := tp("t", 0), tp("t", 1)
	h.assign(p0, -1, "")
	h.assign(p1, -1, "")
	fx.down = true
	h.feed(p0, 0, "e a")
	h.feed(p1, 0, "e x")
	h.feed(p0, 1, "f b")
	require.ErrorIs(t, h.p.halted(), ErrEffect)
	require.ErrorIs(t, h.p.halted(), errOutage)
	assert.Contains(t, h.p.halted().Error(), "t[0] offset 1")
	h.p.handle(message(p0, 2, "e c"))
	h.p.handle(message(p1, 1, "e y"))
	assert.Equal(t, []string{"a@0(last added -1)", "x@0(last added -1)", "b@1(last added 0)"}, fx.ran(), "nothing decided after the failure")
	assert.Equal(t, Counters{Consumed: 2, Admitted: 2, Effects: 2}, h.p.counters.snapshot())

	// The shutdown commits what is durable, never the failed message.
	h.p.revoke(context.Background(), []ledger.TopicPartition{p0, p1}, false, CommitShutdown)
	assert.Equal(t, int64(1), h.committed(p0))
	assert.Equal(t, int64(1), h.committed(p1))

	// A restart resumes at the failed message and runs its effect again.
	again, fx2 := newEffectHarness(t, nil)
	again.cl = h.cl
	again.p.cl = h.cl
	again.assign(p0, 1, "")
	again.feed(p0, 1, "f b", "e c")
	again.tick()
	assert.Equal(t, []string{"b@1(last added -1)", "c@2(last added 1)"}, fx2.ran())
	assert.Equal(t, int64(3), again.committed(p0))
}

// A batch that fails as a whole stops the consumer before the batch's first message: the
// messages before it are decided and committed, none of the batch is, and a restart applies
// the batch again, whole.
func TestEffectBatchFailureStopsBeforeTheBatch(t *testing.T) {
	h, fx := newEffectHarness(t, nil)
	p0 := tp("t", 0)
	h.assign(p0, -1, "")
	h.feed(p0, 0, "e a")
	fx.batchDown = true
	h.feedChunk(p0, 1, "c 0:01", "e b", "r c", "e d")
	require.ErrorIs(t, h.p.halted(), ErrEffect)
	require.ErrorIs(t, h.p.halted(), errOutage)
	assert.Contains(t, h.p.halted().Error(), "t[0] offsets 2 to 4")
	assert.Equal(t, []int{1, 3}, fx.sizes())
	assert.Equal(t, Counters{Consumed: 2, Admitted: 2, Effects: 1}, h.p.counters.snapshot(), "a, and the message before the batch")
	assert.Zero(t, h.dlq.count(), "the refusal in the failed batch is not dead-lettered")
	h.p.revoke(context.Background(), []ledger.TopicPartition{p0}, false, CommitShutdown)
	assert.Equal(t, int64(2), h.committed(p0))

	again, fx2 := newEffectHarness(t, nil)
	again.cl = h.cl
	again.p.cl = h.cl
	again.assign(p0, 2, "")
	again.feedChunk(p0, 2, "e b", "r c", "e d")
	again.tick()
	assert.Equal(t, []int{3}, fx2.sizes(), "the batch again, whole")
	assert.Equal(t, []Decision{Admitted, DeadLettered, Admitted}, again.outcomes(p0, 5)[2:])
}

// Abort from inside an effect (a crash in the middle of it): the message is neither decided
// nor a failure, and nothing more is decided or committed.
func TestEffectAbortedIsNotDecided(t *testing.T) {
	h, fx := newEffectHarness(t, nil)
	fx.abort = h.abort
	p0 := tp("t", 0)
	h.assign(p0, -1, "")
	h.p.handle(message(p0, 0, "e a"))
	h.p.handle(message(p0, 1, "a b"))
	h.p.handle(message(p0, 2, "e c"))
	h.p.tick(h.ctx, CommitTick)
	require.NoError(t, h.p.halted())
	require.NoError(t, h.p.fatal())
	assert.Len(t, fx.ran(), 2)
	assert.Equal(t, int64(0), h.p.parts[p0].led.LastAdded())
	assert.Equal(t, int64(-1), h.committed(p0))
	assert.Equal(t, Counters{Consumed: 1, Admitted: 1, Effects: 1}, h.p.counters.snapshot())
}

// With the real client and broker: an effect failure ends Run with ErrEffect after a graceful
// shutdown that commits up to the failed message, and a new consumer starts there.
func TestKafkaEffectFailureCommitsUpToIt(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"fx": 1}})
	produceStream(t, c, "fx", "e a", "e b", "f c", "e d")
	fx := &effects{down: true, lastAdd: func(ledger.TopicPartition) int64 { return 0 }}
	mod := func(fx *effects) func(*Config[string]) {
		return func(cfg *Config[string]) {
			cfg.Topics = map[string]Handler[string]{"fx": fx.handler}
			cfg.ApplyEffects = fx.apply
			cfg.Sink, cfg.Series = nil, nil
			cfg.FlushInterval = defaultFlushInterval // the shutdown's commit is the only one
		}
	}
	first := start(t, "first", clientConfig(c, "gfx", ""), newMemory(t), []string{"fx"}, mod(fx))
	var err error
	select {
	case err = <-first.done:
		first.ended, first.result = true, err
	case <-time.After(kafkatest.Timeout):
		t.Fatal("Run did not stop")
	}
	require.ErrorIs(t, err, ErrEffect)
	require.ErrorIs(t, err, errOutage)
	assert.Equal(t, int64(2), c.Committed(t, "gfx", "fx")[0].Offset, "committed up to the failed message")
	assert.Equal(t, int64(2), first.c.Counters().Effects)

	fx2 := &effects{lastAdd: func(ledger.TopicPartition) int64 { return 0 }}
	second := start(t, "second", clientConfig(c, "gfx", ""), newMemory(t), []string{"fx"}, mod(fx2))
	eventually(t, "c and d applied", func() bool { return len(fx2.ran()) == 2 })
	require.NoError(t, second.stop(t))
	assert.Equal(t, int64(4), c.Committed(t, "gfx", "fx")[0].Offset)
	assert.Equal(t, []string{"c@2(last added 0)", "d@3(last added 0)"}, fx2.ran())
}

// Batches of different partitions run at once, each on the worker that decides its partition:
// here each batch waits until the other one is in ApplyEffects too, which only concurrent
// calls can satisfy.
func TestEffectBatchesOfPartitionsRunConcurrently(t *testing.T) {
	var inside sync.WaitGroup
	inside.Add(2)
	both := make(chan struct{})
	go func() { inside.Wait(); close(both) }()
	h := newHarness(t, func(c *Config[string]) {
		c.Workers = 2
		c.Topics = map[string]Handler[string]{"t": func(m *kafka.Message) (Event[string], error) {
			return Event[string]{Effect: string(m.Value)}, nil
		}}
		c.ApplyEffects = func(ctx context.Context, batch []Effect) ([]sink.Result, error) {
			inside.Done()
			select {
			case <-both:
				return applied(len(batch)), nil
			case <-time.After(10 * time.Second):
				return nil, errors.New("the other partition's batch never ran alongside")
			}
		}
	})
	p0, p1 := tp("t", 0), tp("t", 1)
	h.assign(p0, -1, "")
	h.assign(p1, -1, "")
	for off := range int64(3) {
		h.p.dispatch(message(p0, off, "a"))
		h.p.dispatch(message(p1, off, "b"))
	}
	h.p.barrier()
	require.NoError(t, h.p.halted())
	h.tick()
	assert.Equal(t, int64(3), h.committed(p0))
	assert.Equal(t, int64(3), h.committed(p1))
}
