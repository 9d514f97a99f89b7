package consumer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/sinktest"
)

// The model test drives processors through random schedules that no broker test can produce
// on demand: failed writes, failed commits, failed dead-letter deliveries, graceful and lost
// revocations, crashes, messages fetched for a paused partition. At every commit the checker
// verifies that nothing below the committed offset is undurable (G2); at the end the stored
// aggregates and progress must equal those of one processor that met no failure (G1), and
// every instance must account for each message it decided (G3).
func TestModelChaosEqualsACalmRun(t *testing.T) {
	seeds := 24
	if testing.Short() {
		seeds = 6
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { runModel(t, seed) })
	}
}

// simBroker holds the logs, the committed offsets and the owner of each partition.
type simBroker struct {
	mu         sync.Mutex
	logs       map[ledger.TopicPartition][]string
	committed  map[ledger.TopicPartition]kafka.TopicPartition
	owner      map[ledger.TopicPartition]int
	failCommit map[int]int
	problems   []string
}

// simClient is one instance's client: positions, pauses and seeks; commits go to the broker,
// which refuses them from an instance that does not own the partition (and records that as a
// bug: the processor must never try).
type simClient struct {
	b      *simBroker
	id     int
	pos    map[ledger.TopicPartition]int64
	paused map[ledger.TopicPartition]bool
}

func (c *simClient) CommitOffsets(offsets []kafka.TopicPartition) ([]kafka.TopicPartition, error) {
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	if c.b.failCommit[c.id] > 0 {
		c.b.failCommit[c.id]--
		return nil, kafka.NewError(kafka.ErrRequestTimedOut, "injected", false)
	}
	for _, o := range offsets {
		tp := ltp(o)
		if c.b.owner[tp] != c.id {
			c.b.problems = append(c.b.problems, fmt.Sprintf("instance %d committed %v it does not own", c.id, tp))
			return nil, kafka.NewError(kafka.ErrIllegalGeneration, "not the owner", false)
		}
		if prev, ok := c.b.committed[tp]; ok && prev.Offset > o.Offset {
			c.b.problems = append(c.b.problems, fmt.Sprintf("commit of %v went back from %d to %d", tp, prev.Offset, o.Offset))
		}
		c.b.committed[tp] = o
	}
	return offsets, nil
}

func (c *simClient) Pause(ps []kafka.TopicPartition) error {
	for _, p := range ps {
		c.paused[ltp(p)] = true
	}
	return nil
}

func (c *simClient) Resume(ps []kafka.TopicPartition) error {
	for _, p := range ps {
		delete(c.paused, ltp(p))
	}
	return nil
}

func (c *simClient) Seek(p kafka.TopicPartition, _ int) error {
	c.pos[ltp(p)] = int64(p.Offset)
	return nil
}

func (c *simClient) GetWatermarkOffsets(topic string, partition int32) (int64, int64, error) {
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	return 0, int64(len(c.b.logs[ledger.TopicPartition{Topic: topic, Partition: partition}])), nil
}

func (c *simClient) Position(ps []kafka.TopicPartition) ([]kafka.TopicPartition, error) {
	out := slices.Clone(ps)
	for i := range out {
		out[i].Offset = kafka.Offset(c.pos[ltp(out[i])])
	}
	return out, nil
}

// flakySink fails the next n writes on request.
type flakySink struct {
	*sinktest.Memory
	mu   sync.Mutex
	fail int
}

func (f *flakySink) failing() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail > 0 {
		f.fail--
		return true
	}
	return false
}

func (f *flakySink) WriteClose(ctx context.Context, b ...sink.CloseBatch) error {
	if f.failing() {
		return errors.New("injected write failure")
	}
	return f.Memory.WriteClose(ctx, b...)
}

func (f *flakySink) WriteCloseGated(ctx context.Context, gate func(context.Context) error, b ...sink.CloseBatch) error {
	if f.failing() {
		return errors.New("injected write failure")
	}
	return f.Memory.WriteCloseGated(ctx, gate, b...)
}

func (f *flakySink) UpsertLatest(ctx context.Context, rows []sink.StateRow) error {
	if f.failing() {
		return errors.New("injected flush failure")
	}
	return f.Memory.UpsertLatest(ctx, rows)
}

type simInstance struct {
	id       int
	p        *processor[string]
	cl       *simClient
	chk      *checker
	dlq      *fakeDLQ
	reported map[int]bool
	crashed  bool
	writes   func() // a tick's writes, started but not yet run (see spawn)
}

type model struct {
	t     *testing.T
	rng   *rand.Rand
	b     *simBroker
	sink  *flakySink
	clock *fakeClock
	ins   []*simInstance
	tps   []ledger.TopicPartition
}

func (m *model) newInstance() *simInstance {
	in := &simInstance{id: len(m.ins), dlq: &fakeDLQ{}, reported: map[int]bool{}}
	in.cl = &simClient{b: m.b, id: in.id, pos: map[ledger.TopicPartition]int64{}, paused: map[ledger.TopicPartition]bool{}}
	in.chk = newChecker(m.sink.Memory)
	in.chk.sink = m.sink
	cfg := Config[string]{
		Kafka:       kafka.ConfigMap{"bootstrap.servers": "sim:9092", "group.id": "g"},
		Topics:      map[string]Handler[string]{"t": testHandler},
		Sink:        m.sink,
		Series:      testKeys,
		DeadLetters: in.dlq,
		IdleTimeout: -1,
		Clock:       m.clock.Now,
		Logger:      discardLogger(),
		Hooks:       []Hook{in.chk},
	}
	s, err := cfg.validate()
	require.NoError(m.t, err)
	s.buffer = int64(m.rng.IntN(3)) * 2048 // sometimes no bound, sometimes a tight one
	in.p, err = newProcessor(s, in.cl)
	require.NoError(m.t, err)
	in.p.startWorkers(context.Background())
	m.t.Cleanup(in.p.stopWorkers)
	// Writes run when the model says: right away for some instances (as with SyncWrites),
	// after any number of later steps for the others.
	if m.rng.IntN(3) > 0 {
		in.p.spawn = func(f func()) { in.writes = f }
	} else {
		in.p.spawn = func(f func()) { f() }
	}
	m.ins = append(m.ins, in)
	return in
}

func (m *model) assign(in *simInstance, tp ledger.TopicPartition) {
	m.b.mu.Lock()
	c, ok := m.b.committed[tp]
	m.b.owner[tp] = in.id
	m.b.mu.Unlock()
	a := assignment{tp: tp, committed: -1}
	if ok {
		a.committed = int64(c.Offset)
		if c.Metadata != nil {
			a.metadata = *c.Metadata
		}
	}
	all := slices.SortedFunc(maps.Keys(m.b.logs), compareTP)
	require.NoError(m.t, in.p.assign(context.Background(), []assignment{a}, all))
	in.cl.pos[tp] = max(a.committed, 0)
	delete(in.cl.paused, tp)
}

func (m *model) ownerOf(tp ledger.TopicPartition) *simInstance {
	m.b.mu.Lock()
	defer m.b.mu.Unlock()
	id, ok := m.b.owner[tp]
	if !ok {
		return nil
	}
	return m.ins[id]
}

func (m *model) live() []*simInstance {
	var out []*simInstance
	for _, in := range m.ins {
		if !in.crashed {
			out = append(out, in)
		}
	}
	return out
}

// release moves tp away from its owner: gracefully, lost, or because the owner crashed.
func (m *model) release(tp ledger.TopicPartition, lost bool) {
	if o := m.ownerOf(tp); o != nil {
		o.p.revoke(context.Background(), []ledger.TopicPartition{tp}, lost, CommitRevoke)
		require.NoError(m.t, o.p.fatal())
	}
	m.b.mu.Lock()
	delete(m.b.owner, tp)
	m.b.mu.Unlock()
}

// deliver hands the next message of tp to in, as the client would.
func (m *model) deliver(in *simInstance, tp ledger.TopicPartition) bool {
	pos := in.cl.pos[tp]
	if pos >= int64(len(m.b.logs[tp])) {
		return false
	}
	in.p.handle(message(tp, pos, m.b.logs[tp][pos]))
	require.NoError(m.t, in.p.fatal())
	in.cl.pos[tp] = pos + 1
	return true
}

func (m *model) step(in *simInstance) {
	in.p.drainReports()
	in.p.resendDue(context.Background())
	in.p.poll(context.Background())
	in.p.checkBuffer(context.Background())
	require.NoError(m.t, in.p.fatal())
}

// finishWrites lets the instance's writes in flight run, as their goroutine would.
func (m *model) finishWrites(in *simInstance) {
	if f := in.writes; f != nil {
		in.writes = nil
		f()
	}
}

func (m *model) reportLetters(in *simInstance, fail bool) {
	for i := range in.dlq.count() {
		if in.reported[i] {
			continue
		}
		in.reported[i] = true
		var err error
		if fail {
			err = errors.New("injected delivery failure")
		}
		in.dlq.deliver(i, err)
		return
	}
}

func runModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 99))
	logs := map[ledger.TopicPartition][]string{}
	tps := []ledger.TopicPartition{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}}
	gen := generate(rng, 2, 150, 0)
	for i, tp := range tps {
		for _, pl := range gen[i] {
			if rng.IntN(25) == 0 {
				pl = "x " + pl
			}
			logs[tp] = append(logs[tp], pl)
		}
	}

	want, wantProgress := calmRun(t, logs, tps)

	m := &model{
		t: t, rng: rng, tps: tps, clock: newFakeClock(T0),
		b: &simBroker{
			logs: logs, committed: map[ledger.TopicPartition]kafka.TopicPartition{},
			owner: map[ledger.TopicPartition]int{}, failCommit: map[int]int{},
		},
		sink: &flakySink{Memory: newMemory(t)},
	}
	a, b := m.newInstance(), m.newInstance()
	m.assign(a, tps[0])
	m.assign(b, tps[1])

	for range 3000 {
		live := m.live()
		in := live[rng.IntN(len(live))]
		m.step(in)
		tp := tps[rng.IntN(len(tps))]
		switch r := rng.IntN(100); {
		case r < 55: // the client delivers a message of an owned, fetching partition
			if m.ownerOf(tp) == in && !in.cl.paused[tp] {
				m.deliver(in, tp)
			}
		case r < 57: // a message fetched before a pause arrives anyway
			if m.ownerOf(tp) == in && in.cl.paused[tp] {
				m.deliver(in, tp)
			}
		case r < 72:
			m.clock.Advance(time.Second)
			in.p.tick(context.Background(), CommitTick)
			require.NoError(t, in.p.fatal())
		case r < 74:
			m.finishWrites(in)
		case r < 76:
			m.sink.mu.Lock()
			m.sink.fail += 1 + rng.IntN(2)
			m.sink.mu.Unlock()
		case r < 84:
			m.reportLetters(in, rng.IntN(4) == 0)
		case r < 86:
			m.b.mu.Lock()
			m.b.failCommit[in.id]++
			m.b.mu.Unlock()
		case r < 90: // rebalance: the partition moves, gracefully
			to := live[rng.IntN(len(live))]
			m.release(tp, false)
			m.assign(to, tp)
		case r < 91: // the assignment is lost
			to := live[rng.IntN(len(live))]
			m.release(tp, true)
			m.assign(to, tp)
		case r < 92: // an instance crashes: its partitions go to a fresh one
			if rng.IntN(2) == 0 {
				m.finishWrites(in) // its writes in flight landed before it died
			}
			fresh := m.newInstance()
			in.crashed = true
			for _, p := range tps {
				if m.ownerOf(p) == in {
					m.b.mu.Lock()
					delete(m.b.owner, p)
					m.b.mu.Unlock()
					m.assign(fresh, p)
				}
			}
		}
	}

	// Calm down: no more failures; everything delivered, reported, written.
	m.sink.mu.Lock()
	m.sink.fail = 0
	m.sink.mu.Unlock()
	m.b.mu.Lock()
	clear(m.b.failCommit)
	m.b.mu.Unlock()
	for range 10 {
		for _, in := range m.live() {
			m.step(in)
			for _, tp := range tps {
				if m.ownerOf(tp) == in {
					for !in.cl.paused[tp] && m.deliver(in, tp) {
					}
				}
			}
			for in.dlq.count() > len(in.reported) {
				m.reportLetters(in, false)
			}
			m.clock.Advance(time.Minute)
			in.p.tick(context.Background(), CommitTick)
			m.finishWrites(in)
			m.step(in)
		}
	}
	for _, tp := range tps {
		o := m.ownerOf(tp)
		if pt := o.p.parts[tp]; pt != nil && o.cl.pos[tp] != int64(len(logs[tp])) {
			t.Logf("%v: paused=%b seekTo=%d next=%d pending=%d open=%d clientPaused=%v buffer=%d", tp, pt.paused, pt.seekTo, pt.next, pt.led.Pending(), pt.openEntries, o.cl.paused[tp], o.p.s.buffer)
		}
		require.Equal(t, int64(len(logs[tp])), o.cl.pos[tp], "partition %v consumed to the end", tp)
		m.release(tp, false)
	}

	m.b.mu.Lock()
	require.Empty(t, m.b.problems)
	m.b.mu.Unlock()
	for _, in := range m.ins {
		in.chk.verify(t)
		c := in.p.counters.snapshot()
		require.Equal(t, c.Consumed, c.Admitted+c.Late+c.DeadLettered, "instance %d", in.id)
	}
	got := aggregates(t, m.sink.Memory, T0.Add(-10*time.Minute), T0.Add(2*time.Hour))
	require.Equal(t, want, got, "the stored aggregates equal the calm run's")
	require.Equal(t, wantProgress, progress(t, m.sink, "t", 2))
	for _, tp := range tps {
		c := m.b.committed[tp]
		require.NotNil(t, c.Metadata)
	}
}

// calmRun is the reference: one processor, every message in order, no failure.
func calmRun(t *testing.T, logs map[ledger.TopicPartition][]string, tps []ledger.TopicPartition) ([]sink.Aggregate, map[int32]time.Time) {
	h := newHarness(t, func(c *Config[string]) { c.Logger = discardLogger() })
	for _, tp := range tps {
		h.assign(tp, -1, "")
		h.feed(tp, 0, logs[tp]...)
	}
	for i := range h.dlq.count() {
		h.dlq.deliver(i, nil)
	}
	h.tick()
	h.p.revoke(context.Background(), tps, false, CommitRevoke)
	assert.Empty(t, h.p.parts)
	return aggregates(t, h.mem, T0.Add(-10*time.Minute), T0.Add(2*time.Hour)), progress(t, h.mem, "t", 2)
}
