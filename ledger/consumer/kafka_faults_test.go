package consumer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/dlq/dlqkafka"
	"github.com/streamledger/streamledger/internal/kafkatest"
	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/sinktest"
)

// Garbled commit metadata: a warning, the watermark restored from closed_through alone, and
// consumption goes on.
func TestKafkaGarbledCommitMetadata(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"gm": 1}})
	produceStream(t, c, "gm", stream...)
	p0 := ledger.TopicPartition{Topic: "gm", Partition: 0}
	c.Commit(t, "ggm", "gm", 0, 4, "\x00garbage;wm=yesterday")
	mem := newMemory(t)
	require.NoError(t, mem.WriteClose(context.Background(), sink.CloseBatch{Source: p0, ClosedThrough: at("14")}))

	in := start(t, "garbled", clientConfig(c, "ggm", ""), mem, []string{"gm"}, nil)
	waitDecided(t, map[ledger.TopicPartition]int64{p0: 7}, in)
	// Offset 4's window (ending 12:20) is open; a later event closes it.
	produceStream(t, c, "gm", "w 25 A 1")
	eventually(t, "committed past offset 4", func() bool { return c.Committed(t, "ggm", "gm")[0].Offset == 8 })
	require.NoError(t, in.stop(t), "no crash")
	in.chk.verify(t)

	ai, ok := in.chk.lastAssign(p0)
	require.True(t, ok)
	assert.ErrorIs(t, ai.MetadataErr, ledger.ErrBadMetadata)
	assert.Equal(t, at("14"), ai.Watermark)
	assert.Contains(t, in.logs.String(), "commit metadata unreadable")
	d := in.chk.decisionsOf(p0)
	for off := int64(4); off < 8; off++ {
		assert.Equal(t, streamOutcomes[off], d[off], "offset %d", off)
	}
	co := c.Committed(t, "ggm", "gm")[0]
	cp, err := ledger.DecodeMetadata(co.Metadata)
	require.NoError(t, err, "the next commit carries readable metadata again")
	assert.Equal(t, at("14"), cp.Watermark, "as of offset 8: after offsets 4-7")
}

// pausedHook records whether a partition was ever reported paused.
type pausedHook struct {
	mu     sync.Mutex
	paused map[ledger.TopicPartition]bool
}

func (h *pausedHook) OnPartition(pi PartitionInfo) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if pi.Paused {
		h.paused[pi.TopicPartition] = true
	}
}

func (h *pausedHook) was(tp ledger.TopicPartition) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.paused[tp]
}

// A dead letter whose delivery is not confirmed keeps its offset, and every one after it,
// uncommitted; the letter is sent again until the broker takes it. Meanwhile the ledger's bound
// pauses the partition, and the consumer keeps polling.
func TestKafkaUnconfirmedDeadLetterKeepsItsOffset(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"d": 1, "dlq.d": 1}})
	fault := c.FailProduce("dlq.d", -1, nil)
	prod, err := dlqkafka.NewProducer(dlqkafka.Config{
		Kafka: c.ConfigMap(), ConsumerID: "test-consumer", Retry: sink.RetryPolicy{MaxAttempts: 1},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = prod.Close(context.Background()) })
	stream := []string{"s 0:01"}
	for i := range 150 { // letters enough to pass a quarter of the smallest buffer bound
		stream = append(stream, fmt.Sprintf("x bad %03d %s", i, strings.Repeat("-", 40)))
	}
	stream = append(stream, "s 0:02", "s 0:03")
	produceStream(t, c, "d", stream...)
	p0 := ledger.TopicPartition{Topic: "d", Partition: 0}

	paused := &pausedHook{paused: map[ledger.TopicPartition]bool{}}
	in := start(t, "dlq", clientConfig(c, "gd", ""), newMemory(t), []string{"d"}, func(cfg *Config[string]) {
		cfg.DeadLetters = prod
		cfg.BufferLimit = 64 << 10
		cfg.Hooks = append(cfg.Hooks, paused)
	}, func(s *settings[string]) { s.deadLetterRetry.InitialBackoff = 20 * time.Millisecond })
	eventually(t, "offset 0 committed, dead letters failing", func() bool {
		return c.Committed(t, "gd", "d")[0].Offset == 1 && in.c.Counters().DeadLetterFailures >= 2
	})
	eventually(t, "more failed deliveries", func() bool { return in.c.Counters().DeadLetterFailures >= 6 })
	assert.Equal(t, int64(1), c.Committed(t, "gd", "d")[0].Offset, "never past the unconfirmed dead letter")
	eventually(t, "paused by the buffer bound while the dead letters wait", func() bool { return paused.was(p0) })
	assert.Empty(t, c.ReadAll(t, "dlq.d"))

	fault.Remove()
	eventually(t, "everything committed once delivered", func() bool { return c.Committed(t, "gd", "d")[0].Offset == int64(len(stream)) })
	require.NoError(t, in.stop(t))
	in.chk.verify(t)

	letters := c.ReadAll(t, "dlq.d")
	require.Len(t, letters, 150, "each letter once: a failed delivery is never acked, and sent again")
	byOffset := map[int64]string{}
	for _, l := range letters {
		hs := make([]dlq.Header, len(l.Headers))
		for j, h := range l.Headers {
			hs[j] = dlq.Header{Key: h.Key, Value: h.Value}
		}
		dl, err := dlq.Decode(l.Key, l.Value, hs)
		require.NoError(t, err)
		assert.Equal(t, "test.decode", dl.ErrorClass)
		byOffset[dl.Offset] = string(dl.Value)
	}
	for off := int64(1); off <= 150; off++ {
		assert.Equal(t, stream[off], byOffset[off], "the letter of offset %d", off)
	}
	cn := in.c.Counters()
	assert.Equal(t, int64(150), cn.DeadLettered)
	assert.Equal(t, cn.Consumed, cn.Admitted+cn.Late+cn.DeadLettered)
}

// A commit failure injected by the broker is logged and retried at the next tick, with the
// same offset and metadata, until it is accepted.
func TestKafkaCommitFailureInjectedByTheBroker(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  *kerr.Error
	}{
		{"metadata too large", kerr.OffsetMetadataTooLarge},
		// A zombie's commit: its generation is gone, and the broker fences it.
		{"illegal generation", kerr.IllegalGeneration},
		{"rebalance in progress", kerr.RebalanceInProgress},
		{"coordinator not available", kerr.CoordinatorNotAvailable},
	} {
		t.Run(tc.name, func(t *testing.T) { commitFailureInjected(t, tc.err) })
	}
}

// commitFailureInjected makes the broker fail the first two commits with err: nothing is
// marked committed, and the next ticks send the same offset and metadata until one is taken.
func commitFailureInjected(t *testing.T, kerrv *kerr.Error) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"cf": 1}})
	fault := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Group: "gcf", Err: kerrv, Count: 2})
	produceStream(t, c, "cf", "s 0:01", "s 0:02")
	in := start(t, "cf", clientConfig(c, "gcf", ""), newMemory(t), []string{"cf"}, func(cfg *Config[string]) {
		cfg.FlushInterval = -1 // ticks on request only
	})
	waitDecided(t, map[ledger.TopicPartition]int64{{Topic: "cf", Partition: 0}: 1}, in)
	eventually(t, "committed", func() bool {
		in.c.Tick()
		return c.Committed(t, "gcf", "cf")[0].Offset == 2
	})
	require.NoError(t, in.stop(t))
	in.chk.verify(t)
	assert.Equal(t, 2, fault.Hits())

	// Whatever librdkafka made of the errors (retried inside the call, or, for a fenced
	// generation, the assignment declared lost and taken again from the committed offset),
	// nothing refused was taken as committed: the checker saw every commit land only past
	// durable messages, and the last attempt carried the end.
	in.chk.mu.Lock()
	commits := in.chk.commits
	in.chk.mu.Unlock()
	require.NotEmpty(t, commits)
	var failed int
	for i, ci := range commits {
		require.Len(t, ci.Commits, 1)
		assert.LessOrEqual(t, ci.Commits[0].Offset, int64(2), "commit %d", i)
		assert.NotEmpty(t, ci.Commits[0].Metadata, "commit %d carries the watermark", i)
		if ci.Err != nil {
			failed++
		}
	}
	last := commits[len(commits)-1]
	assert.NoError(t, last.Err, "the last attempt was taken")
	assert.Equal(t, int64(2), last.Commits[0].Offset)
	assert.Equal(t, int64(failed), in.c.Counters().CommitFailures)
	if kerrv == kerr.IllegalGeneration {
		assert.Contains(t, in.logs.String(), "lost=true", "the fenced member's assignment was lost, not committed")
	}
}

// gatedSink blocks the next close write once armed, until released with an error (or nil).
type gatedSink struct {
	*sinktest.Memory
	mu      sync.Mutex
	armed   bool
	entered chan struct{}
	release chan error
}

func (g *gatedSink) arm() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed = true
	g.entered = make(chan struct{})
	g.release = make(chan error)
}

func (g *gatedSink) WriteClose(ctx context.Context, b ...sink.CloseBatch) error {
	if err := g.hold(ctx); err != nil {
		return err
	}
	return g.Memory.WriteClose(ctx, b...)
}

func (g *gatedSink) WriteCloseGated(ctx context.Context, gate func(context.Context) error, b ...sink.CloseBatch) error {
	if err := g.hold(ctx); err != nil {
		return err
	}
	return g.Memory.WriteCloseGated(ctx, gate, b...)
}

// hold waits, when armed, until the test releases the write, and returns what it releases
// it with.
func (g *gatedSink) hold(ctx context.Context) error {
	g.mu.Lock()
	armed, entered, release := g.armed, g.entered, g.release
	g.armed = false
	g.mu.Unlock()
	if !armed {
		return nil
	}
	close(entered)
	select {
	case err := <-release:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A revocation that arrives while a write is in progress, and the write then fails: the
// revocation writes again, commits only what is durable, and the next owner rebuilds the rest;
// the stored aggregates equal those of one consumer.
func TestKafkaRevokeDuringAWrite(t *testing.T) {
	const partitions = 2
	rng := rand.New(rand.NewPCG(3, 4))
	batches := [][][]string{
		generate(rng, partitions, 30, 0),
		generate(rng, partitions, 30, 12*time.Minute),
		generate(rng, partitions, 30, 24*time.Minute),
	}
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"rw": partitions, "rw-ref": partitions}})

	var all []*kafkatest.Record
	for _, b := range batches {
		all = append(all, records("rw-ref", b)...)
	}
	c.Produce(t, all...)
	ref := newMemory(t)
	single := start(t, "single", clientConfig(c, "rw-ref", ""), ref, []string{"rw-ref"}, nil)
	waitDecided(t, lastOffsets(all), single)
	require.NoError(t, single.stop(t))

	// a ticks only when told, so that nothing retries its failed write before the revocation.
	gs := &gatedSink{Memory: newMemory(t)}
	b1 := records("rw", batches[0])
	c.Produce(t, b1...)
	a := start(t, "a", clientConfig(c, "grw", ""), gs.Memory, []string{"rw"}, func(cfg *Config[string]) {
		cfg.Sink = gs
		cfg.FlushInterval = -1 // ticks on request only
	})
	waitDecided(t, lastOffsets(b1), a)
	a.tick(t)
	p0 := ledger.TopicPartition{Topic: "rw", Partition: 0}
	eventually(t, "a committed partition 0", func() bool { return offsetOf(c.Committed(t, "grw", "rw"), 0) > 0 })
	before := offsetOf(c.Committed(t, "grw", "rw"), 0)

	b2 := records("rw", batches[1])
	c.Produce(t, b2...)
	waitDecided(t, lastOffsets(b2), a)
	gs.arm()
	a.c.Tick()
	select {
	case <-gs.entered: // a is writing partition 0's closes
	case <-time.After(kafkatest.Timeout):
		t.Fatal("no write started")
	}
	joins := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.JoinGroup}, Group: "grw", Observe: true, Count: -1})
	b := start(t, "b", clientConfig(c, "grw", ""), gs.Memory, []string{"rw"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), kafkatest.Timeout)
	defer cancel()
	require.NoError(t, joins.Wait(ctx, 1), "the second consumer asked to join: a rebalance is pending")
	gs.release <- errors.New("connection reset by peer")

	eventually(t, "both own partitions", func() bool {
		return len(a.own.owns()) > 0 && len(b.own.owns()) > 0
	})
	// The revocation wrote partition 0's closes again and committed past them.
	a.chk.mu.Lock()
	var revoked []ledger.Commit
	for _, ci := range a.chk.commits {
		if ci.Reason == CommitRevoke && ci.Err == nil {
			revoked = append(revoked, ci.Commits...)
		}
	}
	a.chk.mu.Unlock()
	var moved bool
	for _, cm := range revoked {
		if cm.TopicPartition == p0 && cm.Offset > before {
			moved = true
		}
	}
	assert.True(t, moved, "revocation commits %v, partition 0 was at %d", revoked, before)
	assert.Equal(t, int64(1), a.c.Counters().WriteFailures)

	stopTicks := make(chan struct{})
	go func() {
		for {
			select {
			case <-time.After(20 * time.Millisecond):
				a.c.Tick()
			case <-stopTicks:
				return
			}
		}
	}()
	defer close(stopTicks)
	b3 := records("rw", batches[2])
	c.Produce(t, b3...)
	waitDecided(t, lastOffsets(b3), a, b)
	require.NoError(t, a.stop(t))
	waitDecided(t, lastOffsets(b3), b)
	require.NoError(t, b.stop(t))

	a.chk.verify(t)
	b.chk.verify(t)
	window := func(m *sinktest.Memory) []sink.Aggregate {
		return aggregates(t, m, T0.Add(-10*time.Minute), T0.Add(time.Hour))
	}
	assert.Equal(t, window(ref), window(gs.Memory))
}

// A quiet partition that is caught up goes idle: its watermark follows the (injected) clock,
// its windows close and commit, and data that then arrives for them is late.
func TestKafkaIdlePartitionClosesItsWindows(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"i": 2}})
	c.Produce(t,
		&kafkatest.Record{Topic: "i", Partition: 0, Value: []byte("w 1 A 1")},
		&kafkatest.Record{Topic: "i", Partition: 1, Value: []byte("w 2 B 1")},
	)
	clock := newFakeClock(T0)
	lags := &lagHook{lag: map[ledger.TopicPartition]PartitionInfo{}}
	mem := newMemory(t)
	in := start(t, "idle", clientConfig(c, "gi", ""), mem, []string{"i"}, func(cfg *Config[string]) {
		cfg.IdleTimeout = 30 * time.Second
		cfg.Clock = clock.Now
		cfg.Hooks = append(cfg.Hooks, lags)
	})
	p0, p1 := ledger.TopicPartition{Topic: "i", Partition: 0}, ledger.TopicPartition{Topic: "i", Partition: 1}
	waitDecided(t, map[ledger.TopicPartition]int64{p0: 0, p1: 0}, in)
	eventually(t, "caught up: lag 0", func() bool { return lags.get(p0).Lag == 0 && lags.get(p1).Lag == 0 })
	assert.Equal(t, int64(-1), offsetOf(c.Committed(t, "gi", "i"), 0), "the window is open: nothing committed")

	clock.Advance(6 * time.Minute) // wm = 12:01 + 6 min - 2 min = 12:05 on partition 0
	eventually(t, "idle advance written and committed", func() bool {
		co := c.Committed(t, "gi", "i")
		return offsetOf(co, 0) == 1 && offsetOf(co, 1) == 1
	})
	eventually(t, "partition 0 reported idle", func() bool { return lags.get(p0).Idle })
	assert.False(t, progress(t, mem, "i", 2)[0].Before(at("5")))
	cp, err := ledger.DecodeMetadata(c.Committed(t, "gi", "i")[0].Metadata)
	require.NoError(t, err)
	assert.False(t, cp.Watermark.Before(at("5")), "the commit carries the advance")

	c.Produce(t, &kafkatest.Record{Topic: "i", Partition: 0, Value: []byte("w 4 A 9")})
	waitDecided(t, map[ledger.TopicPartition]int64{p0: 1}, in)
	assert.Equal(t, Late, in.chk.decisionsOf(p0)[1])
	require.NoError(t, in.stop(t))
	in.chk.verify(t)
}

func offsetOf(m map[int32]kafkatest.CommittedOffset, p int32) int64 {
	if co, ok := m[p]; ok {
		return co.Offset
	}
	return -1
}

type lagHook struct {
	mu  sync.Mutex
	lag map[ledger.TopicPartition]PartitionInfo
}

func (h *lagHook) OnPartition(pi PartitionInfo) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lag[pi.TopicPartition] = pi
}

func (h *lagHook) get(tp ledger.TopicPartition) PartitionInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	pi, ok := h.lag[tp]
	if !ok {
		pi.Lag = -1
	}
	return pi
}

// A shutdown stuck on a write is cut short by Abort: Run returns ErrAborted and nothing that
// was not durable is committed.
func TestKafkaAbortCutsTheShutdownShort(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"ab": 1}})
	produceStream(t, c, "ab", "w 1 A 1")
	gs := &gatedSink{Memory: newMemory(t)}
	p0 := ledger.TopicPartition{Topic: "ab", Partition: 0}
	in := start(t, "abort", clientConfig(c, "gab", ""), gs.Memory, []string{"ab"}, func(cfg *Config[string]) {
		cfg.Sink = gs
		cfg.WriteTimeout = time.Minute
		cfg.ShutdownTimeout = time.Minute
	})
	waitDecided(t, map[ledger.TopicPartition]int64{p0: 0}, in)
	gs.arm()
	produceStream(t, c, "ab", "w 9 A 1") // closes the window of the first
	select {
	case <-gs.entered:
	case <-time.After(kafkatest.Timeout):
		t.Fatal("no write started")
	}
	in.cancel() // first signal: graceful, but the write hangs
	in.c.Abort()
	select {
	case err := <-in.done:
		in.ended, in.result = true, err
		require.ErrorIs(t, err, ErrAborted)
	case <-time.After(kafkatest.Timeout):
		t.Fatal("Abort did not end Run")
	}
	assert.Empty(t, c.Committed(t, "gab", "ab"), "the window was never written: nothing committed")
	in.chk.verify(t)
}

// eventLog records, in order, the decisions and writes of one consumer.
type eventLog struct {
	mu     sync.Mutex
	events []any
}

func (l *eventLog) OnMessage(m MessageInfo) { l.add(m) }
func (l *eventLog) OnWrite(w WriteInfo)     { l.add(w) }
func (l *eventLog) add(e any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

// A partition whose close write fails decides nothing more until a write succeeds; then every
// message is decided once, in order, none skipped, with the real client's pause, seek and resume.
func TestKafkaFailedWriteHoldsThePartition(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"fw": 1}})
	var first, second []string
	for i := range 10 {
		first = append(first, fmt.Sprintf("w %d A %d", 3*i, i))
		second = append(second, fmt.Sprintf("w %d B %d", 30+3*i, i))
	}
	produceStream(t, c, "fw", first...)
	mem := newMemory(t)
	log := &eventLog{}
	in := start(t, "fw", clientConfig(c, "gfw", ""), mem, []string{"fw"}, func(cfg *Config[string]) {
		cfg.FlushInterval = -1 // ticks on request only
		cfg.Hooks = append(cfg.Hooks, log)
	})
	p0 := ledger.TopicPartition{Topic: "fw", Partition: 0}
	waitDecided(t, map[ledger.TopicPartition]int64{p0: 9}, in)
	mem.FailNext(errors.New("database down"))
	produceStream(t, c, "fw", second[:5]...)
	in.tick(t) // the write fails: paused
	produceStream(t, c, "fw", second[5:]...)
	in.tick(t) // the retry succeeds: resumed
	waitDecided(t, map[ledger.TopicPartition]int64{p0: 19}, in)
	in.tick(t)
	require.NoError(t, in.stop(t))
	in.chk.verify(t)

	log.mu.Lock()
	defer log.mu.Unlock()
	var offsets []int64
	failed, retried := -1, -1
	for i, e := range log.events {
		switch e := e.(type) {
		case MessageInfo:
			offsets = append(offsets, e.Offset)
			if failed >= 0 && retried < 0 {
				t.Errorf("offset %d decided while the failed write was missing", e.Offset)
			}
		case WriteInfo:
			if e.Err != nil && failed < 0 {
				failed = i
			} else if e.Err == nil && failed >= 0 && retried < 0 {
				retried = i
			}
		}
	}
	require.Positive(t, failed)
	require.Greater(t, retried, failed)
	want := make([]int64, 20)
	for i := range want {
		want[i] = int64(i)
	}
	assert.Equal(t, want, offsets, "every offset decided once, in order")
	t.Logf("messages dropped while paused and fetched again: %v", strings.Contains(in.logs.String(), "paused partition dropped"))
}

// A commit the broker never answers (a coordinator that went away) holds neither the loop
// nor the shutdown past their bounds: Run returns within ShutdownTimeout, whether the stop
// comes after the commit timed out or while the loop still waits for it (a commit timeout
// of an hour).
func TestKafkaCommitNeverAnswered(t *testing.T) {
	for _, tc := range []struct {
		name          string
		commitTimeout time.Duration
	}{
		{"after the commit timed out", 200 * time.Millisecond},
		{"while the loop waits for it", time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) { testCommitNeverAnswered(t, tc.commitTimeout) })
	}
}

func testCommitNeverAnswered(t *testing.T, commitTimeout time.Duration) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"na": 1}})
	produceStream(t, c, "na", "s 0:01", "s 0:02")
	in := start(t, "na", clientConfig(c, "gna", ""), newMemory(t), []string{"na"}, func(cfg *Config[string]) {
		cfg.ShutdownTimeout = 2 * time.Second
	}, func(s *settings[string]) { s.commitTimeout = commitTimeout })
	eventually(t, "committed", func() bool { return offsetOf(c.Committed(t, "gna", "na"), 0) == 2 })
	var held atomic.Int32
	c.ControlKey(int16(kmsg.OffsetCommit), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		held.Add(1)
		return nil, nil, true // never answered
	})
	produceStream(t, c, "na", "s 0:03")
	waitDecided(t, map[ledger.TopicPartition]int64{{Topic: "na", Partition: 0}: 2}, in)
	eventually(t, "a commit is held", func() bool { return held.Load() > 0 })
	if commitTimeout < time.Minute {
		eventually(t, "a commit timed out", func() bool { return in.c.Counters().CommitFailures > 0 })
	}
	start := time.Now()
	in.cancel()
	select {
	case err := <-in.done:
		in.ended, in.result = true, err
	case <-time.After(kafkatest.Timeout):
		t.Fatal("Run did not return")
	}
	assert.Less(t, time.Since(start), 3*time.Second, "bounded by ShutdownTimeout")
	in.chk.verify(t)
}
