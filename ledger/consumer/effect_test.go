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
)

// effects is a toy effect target: payloads "e <id>" apply id, "r <id>" are refused by the
// effect, "f <id>" fail for a reason of the infrastructure while down is set, and anything else
// is the test handler's. It records every run of an effect, in order, with the ledger's last
// added offset at that moment (the effect must run before its message enters the ledger).
type effects struct {
	mu      sync.Mutex
	runs    []string
	down    bool
	abort   func() // called by "a <id>" effects: Abort from inside an effect
	lastAdd func(ledger.TopicPartition) int64
}

var errOutage = errors.New("database unavailable (test)")

type refusedError struct{ id string }

func (e *refusedError) Error() string      { return fmt.Sprintf("%s refused", e.id) }
func (e *refusedError) ErrorClass() string { return "test.refused" }

func (fx *effects) handler(m *kafka.Message) (Event[string], error) {
	kind, id, _ := strings.Cut(string(m.Value), " ")
	tp := ledger.TopicPartition{Topic: *m.TopicPartition.Topic, Partition: m.TopicPartition.Partition}
	off := int64(m.TopicPartition.Offset)
	var run func(ctx context.Context) error
	switch kind {
	case "e":
		run = func(context.Context) error { return nil }
	case "r":
		run = func(context.Context) error { return Reject(fmt.Errorf("credit: %w", &refusedError{id: id})) }
	case "f":
		run = func(context.Context) error {
			if fx.down {
				return fmt.Errorf("applying %s: %w", id, errOutage)
			}
			return nil
		}
	case "a":
		run = func(ctx context.Context) error {
			fx.abort()
			return ctx.Err()
		}
	default:
		return testHandler(m)
	}
	return Event[string]{Effect: func(ctx context.Context) error {
		fx.mu.Lock()
		fx.runs = append(fx.runs, fmt.Sprintf("%s@%d(last added %d)", id, off, fx.lastAdd(tp)))
		fx.mu.Unlock()
		return run(ctx)
	}}, nil
}

func (fx *effects) ran() []string {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	return append([]string(nil), fx.runs...)
}

func newEffectHarness(t *testing.T, mod func(*Config[string])) (*harness, *effects) {
	fx := &effects{}
	h := newHarness(t, func(c *Config[string]) {
		c.Topics = map[string]Handler[string]{"t": fx.handler}
		if mod != nil {
			mod(c)
		}
	})
	fx.lastAdd = func(tp ledger.TopicPartition) int64 { return h.p.parts[tp].led.LastAdded() }
	return h, fx
}

// An effect runs once per delivery, before its message enters the ledger; its entry is durable
// at once, so the offset is committed at the next tick and not before. A redelivery runs it
// again (recognising its earlier success is the effect's own business: its marker).
func TestEffectRunsOncePerDeliveryAndCommitsAtTheNextTick(t *testing.T) {
	for _, withSink := range []bool{true, false} {
		t.Run(fmt.Sprintf("sink=%v", withSink), func(t *testing.T) {
			h, fx := newEffectHarness(t, func(c *Config[string]) {
				if !withSink {
					c.Sink, c.Keys = nil, nil
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
				assert.Equal(t, Admitted, m.Outcome)
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

// An effect that refuses its message sends it to the dead-letter topic, with the refusal's
// class; the offset passes it only once the letter's delivery is confirmed.
func TestEffectRejectionIsDeadLettered(t *testing.T) {
	h, fx := newEffectHarness(t, nil)
	p0 := tp("t", 0)
	h.assign(p0, -1, "")
	h.feed(p0, 0, "e a", "r b", "e c")
	assert.Equal(t, []Outcome{Admitted, DeadLettered, Admitted}, h.outcomes(p0, 3))
	assert.Len(t, fx.ran(), 3)
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
	h.clock.Advance(h.p.s.DeadLetterBackoff)
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
			cfg.Sink, cfg.Keys = nil, nil
			cfg.FlushInterval = DefaultFlushInterval // the shutdown's commit is the only one
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
