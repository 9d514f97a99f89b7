package consumer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/kafkatest"
	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/sinktest"
)

// instance is one running Consumer in a test.
type instance struct {
	name   string
	c      *Consumer[string]
	chk    *checker
	own    *owner
	logs   *syncBuffer
	cancel context.CancelFunc
	done   chan error
	result error
	ended  bool
	ticks  tickCounter
}

// tickCounter counts the ticks that ran.
type tickCounter struct{ n atomic.Int64 }

func (c *tickCounter) OnTick(TickInfo) { c.n.Add(1) }

// tick asks in for a tick and waits until one has run.
func (in *instance) tick(t *testing.T) {
	t.Helper()
	n := in.ticks.n.Load()
	in.c.Tick()
	eventually(t, "a tick ran", func() bool { return in.ticks.n.Load() > n })
}

// owner tracks which partitions an instance owns, from its hooks.
type owner struct {
	mu    sync.Mutex
	parts map[ledger.TopicPartition]bool
}

func (o *owner) OnAssign(a AssignInfo) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.parts[a.TopicPartition] = true
}

func (o *owner) OnRevoke(r RevokeInfo) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.parts, r.TopicPartition)
}

func (o *owner) owns() map[ledger.TopicPartition]bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[ledger.TopicPartition]bool{}
	for k := range o.parts {
		out[k] = true
	}
	return out
}

// clientConfig is the client configuration of test consumers: fast heartbeats and quiet logs.
func clientConfig(c *kafkatest.Cluster, group, assignor string) kafka.ConfigMap {
	m := c.ConfigMap(kafka.ConfigMap{
		"group.id":                           group,
		"auto.offset.reset":                  "earliest",
		"session.timeout.ms":                 6000,
		"heartbeat.interval.ms":              100,
		"fetch.wait.max.ms":                  20,
		"topic.metadata.refresh.interval.ms": 1000,
	})
	if assignor != "" {
		m["partition.assignment.strategy"] = assignor
	}
	return m
}

// start runs a consumer of topics on mem until stop. tune, if given, shortens the runtime's
// fixed timings after New; Polls wait 10 ms rather than 100 ms in any case.
func start(t *testing.T, name string, kc kafka.ConfigMap, mem *sinktest.Memory, topics []string, mod func(*Config[string]),
	tune ...func(*settings[string])) *instance {
	t.Helper()
	in := &instance{name: name, chk: newChecker(mem), own: &owner{parts: map[ledger.TopicPartition]bool{}}, logs: &syncBuffer{}, done: make(chan error, 1)}
	handlers := map[string]Handler[string]{}
	for _, tp := range topics {
		handlers[tp] = testHandler
	}
	cfg := Config[string]{
		Kafka:         kc,
		Topics:        handlers,
		Sink:          mem,
		Series:        testKeys,
		IdleTimeout:   -1,
		FlushInterval: 20 * time.Millisecond,
		WriteTimeout:  5 * time.Second,
		Logger:        testLogger(in.logs),
		Hooks:         []Hook{in.chk, in.own, &in.ticks},
	}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg)
	require.NoError(t, err)
	c.s.pollTimeout = 10 * time.Millisecond
	for _, f := range tune {
		f(c.s)
	}
	in.c = c
	ctx, cancel := context.WithCancel(context.Background())
	in.cancel = cancel
	go func() { in.done <- c.Run(ctx) }()
	t.Cleanup(func() {
		in.stop(t)
		if t.Failed() {
			t.Logf("logs of %s:\n%s", name, in.logs.String())
		}
	})
	return in
}

// stop cancels the consumer's context and waits for Run to return.
func (in *instance) stop(t *testing.T) error {
	t.Helper()
	if in.ended {
		return in.result
	}
	in.cancel()
	select {
	case in.result = <-in.done:
	case <-time.After(kafkatest.Timeout):
		in.c.Abort()
		in.result = <-in.done
		t.Errorf("%s did not stop within %s", in.name, kafkatest.Timeout)
	}
	in.ended = true
	return in.result
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, kafkatest.Timeout, 5*time.Millisecond, what)
}

// decidedThrough reports whether the instance decided offset last of tp in its current
// assignment.
func (in *instance) decidedThrough(tp ledger.TopicPartition, last int64) bool {
	in.chk.mu.Lock()
	defer in.chk.mu.Unlock()
	_, ok := in.chk.decided[tp][last]
	return ok
}

// waitDecided waits until every partition's current owner among ins decided its last offset.
func waitDecided(t *testing.T, last map[ledger.TopicPartition]int64, ins ...*instance) {
	t.Helper()
	eventually(t, fmt.Sprintf("every partition decided through %v", last), func() bool {
		for tp, off := range last {
			done := false
			for _, in := range ins {
				if !in.ended && in.own.owns()[tp] && in.decidedThrough(tp, off) {
					done = true
				}
			}
			if !done {
				return false
			}
		}
		return true
	})
}

// generate returns n payloads per partition with event times from base onwards: mostly in
// order, some out of order (a few late), several keys, some state rows.
func generate(rng *rand.Rand, partitions int32, n int, base time.Duration) [][]string {
	out := make([][]string, partitions)
	for p := range partitions {
		for i := range n {
			sec := max(int(base/time.Second)+i*20+rng.IntN(180)-150, 0)
			kind := "w"
			switch rng.IntN(10) {
			case 0:
				kind = "ws"
			case 1:
				kind = "s"
			}
			out[p] = append(out[p], fmt.Sprintf("%s %d:%02d %c %d", kind, sec/60, sec%60, 'A'+rune(rng.IntN(5)), rng.IntN(600)))
		}
	}
	return out
}

// records returns the payloads as records of topic, partition by partition.
func records(topic string, payloads [][]string) []*kafkatest.Record {
	var recs []*kafkatest.Record
	for p, pls := range payloads {
		for _, pl := range pls {
			recs = append(recs, &kafkatest.Record{Topic: topic, Partition: int32(p), Value: []byte(pl)})
		}
	}
	return recs
}

// lastOffsets returns the last offset of each partition among recs (after Produce).
func lastOffsets(recs []*kafkatest.Record) map[ledger.TopicPartition]int64 {
	out := map[ledger.TopicPartition]int64{}
	for _, r := range recs {
		tp := ledger.TopicPartition{Topic: r.Topic, Partition: r.Partition}
		out[tp] = max(out[tp], r.Offset)
	}
	return out
}

// progress returns the sink's closed_through of every partition of topic.
func progress(t *testing.T, mem sink.ProgressReader, topic string, partitions int32) map[int32]time.Time {
	t.Helper()
	var tps []ledger.TopicPartition
	for p := range partitions {
		tps = append(tps, ledger.TopicPartition{Topic: topic, Partition: p})
	}
	m, err := mem.ClosedThrough(context.Background(), tps...)
	require.NoError(t, err)
	out := map[int32]time.Time{}
	for tp, ct := range m {
		out[tp.Partition] = ct
	}
	return out
}
