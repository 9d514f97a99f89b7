package consumer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/sinktest"
)

// deferWrites makes the harness hold a tick's writes until run is called, as a slow sink
// on the writes' goroutine would.
func (h *harness) deferWrites() (run func()) {
	var pending func()
	h.p.spawn = func(f func()) { pending = f }
	return func() {
		h.t.Helper()
		require.NotNil(h.t, pending, "writes in flight")
		f := pending
		pending = nil
		f()
	}
}

// failingCloses fails every close batch while fail is set.
type failingCloses struct {
	sink.Sink
	fail bool
}

func (f *failingCloses) WriteClose(ctx context.Context, b ...sink.CloseBatch) error {
	if f.fail {
		return errors.New("injected close failure")
	}
	return f.Sink.WriteClose(ctx, b...)
}

// slowCloses makes every close batch take at least d.
type slowCloses struct {
	sink.Sink
	d time.Duration
}

func (s slowCloses) WriteClose(ctx context.Context, b ...sink.CloseBatch) error {
	time.Sleep(s.d)
	return s.Sink.WriteClose(ctx, b...)
}

func TestOverlappedWritesDecideMessagesAndCommitOnlyWhenDone(t *testing.T) {
	ticks := &tickRecorder{}
	h := newHarness(t, func(c *Config[string]) {
		c.Sink = slowCloses{Sink: c.Sink, d: 2 * time.Millisecond}
		c.Hooks = append(c.Hooks, ticks)
		c.BufferLimit = -1 // no bound: a due tick waits for the writes in flight
	})
	run := h.deferWrites()
	p0 := tp("t", 0)
	h.assign(p0, -1, "")
	h.feed(p0, 0, "ws 1 A 1", "ws 7 A 2") // the second closes [12:00,12:05) at the tick

	h.tick()
	require.NotNil(t, h.p.job, "the tick's writes are in flight")
	assert.Empty(t, h.closes(), "nothing written yet")
	assert.Equal(t, int64(-1), h.committed(p0), "nothing committed before the writes are done")

	// The loop goes on deciding: the new messages join the next flush.
	h.feed(p0, 2, "ws 8 A 3", "ws 16 B 4")
	assert.Equal(t, []Decision{A, A, A, A}, h.outcomes(p0, 4))
	assert.Equal(t, 2, h.p.bufferedRows(), "rows of the next flush")
	h.p.poll(context.Background())
	assert.Equal(t, int64(-1), h.committed(p0), "poll commits nothing while the writes run")

	// A tick that comes meanwhile waits for them: the next poll waits until they are done
	// (here it runs them), applies them and runs the tick.
	h.tick()
	assert.True(t, h.p.tickDue)
	h.p.poll(context.Background())
	closes := h.closes()
	require.Len(t, closes, 1)
	assert.Equal(t, at("5"), closes[0].ClosedThrough)
	// Offset 0 is durable (its window and its state row written); 1 waits for [12:05,12:10),
	// which closes at the tick that waited and is written by its own writes.
	assert.Equal(t, int64(1), h.committed(p0))
	assert.False(t, h.p.tickDue)
	require.Len(t, ticks.waited, 2)
	assert.Zero(t, ticks.waited[0], "the first tick found no writes in flight")
	assert.GreaterOrEqual(t, ticks.waited[1], 2*time.Millisecond, "the second waited for the first's close")
	require.NotNil(t, h.p.job, "the waiting tick started the next writes")
	assert.Zero(t, h.p.bufferedRows())

	run()
	h.p.poll(context.Background())
	assert.Equal(t, int64(3), h.committed(p0), "2 and 3's state written, [12:05,12:10) closed; 3 waits for 12:20")
}

// With a buffer bound, a tick that comes while writes are in flight does not stop the loop
// until the write backlog presses the bound (see TestHoldsLoopOnlyWhenTheBacklogPressesTheBound):
// the loop goes on deciding, and the due tick runs once the writes are done, with everything
// decided meanwhile.
func TestDueTickWaitsOnlyWhenTheBacklogPressesTheBound(t *testing.T) {
	for _, tc := range []struct {
		name   string
		buffer int64 // the budget; 0 keeps the default
		waits  bool
	}{
		{"backlog under a quarter", 0, false},
		{"backlog past half", 64, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			if tc.buffer > 0 {
				h.p.s.buffer = tc.buffer
			}
			run := h.deferWrites()
			p0 := tp("t", 0)
			h.assign(p0, -1, "")
			h.feed(p0, 0, "ws 1 A 1", "ws 7 A 2")
			h.tick()
			require.NotNil(t, h.p.job, "the tick's writes are in flight")
			h.feed(p0, 2, "ws 8 A 3")
			h.tick()
			require.True(t, h.p.tickDue)

			h.p.poll(context.Background())
			if tc.waits {
				assert.False(t, h.p.tickDue, "the due tick waited for the writes, then ran")
				assert.Len(t, h.closes(), 1, "the first tick's close is written")
				assert.Equal(t, int64(1), h.committed(p0))
				return
			}
			assert.True(t, h.p.tickDue, "the tick stays due while the writes run")
			assert.Empty(t, h.closes(), "nothing written yet")
			h.feed(p0, 3, "ws 16 B 4")
			assert.Equal(t, 2, h.p.bufferedRows(), "decided while the writes run, for the due tick")

			run()
			h.p.poll(context.Background())
			assert.False(t, h.p.tickDue, "the due tick ran once the writes were done")
			assert.Len(t, h.closes(), 1)
			assert.Equal(t, int64(1), h.committed(p0))
			assert.Zero(t, h.p.bufferedRows(), "the due tick took the rows decided meanwhile")
			run()
			h.p.poll(context.Background())
			assert.Equal(t, int64(3), h.committed(p0), "2 and 3's state written, [12:05,12:10) closed")
		})
	}
}

// The loop waits for the writes in flight only when what it decides meanwhile would press
// the bound: a backlog past half the budget, or past a quarter while the backlog and the open
// windows (counted three times) pass all of it. Below that the writes drop their share when
// they are done. Without a bound it waits when a tick is due.
func TestHoldsLoopOnlyWhenTheBacklogPressesTheBound(t *testing.T) {
	for _, tc := range []struct {
		name             string
		buffer           int64
		due              bool
		windows, backlog int64
		waits            bool
	}{
		{"backlog under a quarter", 1000, true, 300, 240, false},
		{"past a quarter, room beside the windows", 1000, true, 100, 300, false},
		{"past a quarter, windows and backlog past the budget", 1000, false, 250, 300, true},
		{"past half", 1000, false, 0, 510, true},
		{"no bound, no tick due", -1, false, 0, 1 << 30, false},
		{"no bound, a tick due", -1, true, 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.p.s.buffer = tc.buffer
			h.assign(tp("t", 0), -1, "")
			pt := h.p.order[0]
			pt.winBytes.Store(tc.windows)
			pt.stateBytes.Store(tc.backlog)
			h.p.job, h.p.tickDue = &writeJob[string]{}, tc.due
			defer func() {
				h.p.job, h.p.tickDue = nil, false
				pt.winBytes.Store(0)
				pt.stateBytes.Store(0)
			}()
			assert.Equal(t, tc.waits, h.p.holdsLoop())
		})
	}
}

// Rows decided while writes were in flight that leave the backlog past a quarter once the
// writes are done pause every partition, so that the backlog does not grow while a tick run
// at once writes it; they resume once it is back under resumeAt of the quarter.
func TestBufferBoundPausesForWhatWasDecidedDuringTheWrites(t *testing.T) {
	h := newHarness(t, nil)
	h.p.s.buffer = 8 << 10 // a quarter: 2 KiB, about ten state rows; half: about twenty
	run := h.deferWrites()
	p0 := tp("t", 0)
	h.assign(p0, -1, "")
	h.feed(p0, 0, "s 0:00")
	h.tick()
	require.NotNil(t, h.p.job, "the tick's writes are in flight")
	for i := range int64(12) {
		h.feed(p0, 1+i, fmt.Sprintf("s 0:%02d", 1+i))
	}
	_, backlog := h.p.buffered()
	require.Greater(t, backlog, int64(2<<10), "past a quarter")
	require.False(t, h.p.holdsLoop(), "under half, no windows")

	h.p.checkBuffer(h.ctx)
	require.NotNil(t, h.p.job, "the loop went on without waiting for the writes")
	assert.False(t, h.cl.paused[p0])
	run()
	h.p.checkBuffer(h.ctx)
	require.Nil(t, h.p.job, "the writes applied")
	assert.Equal(t, int64(1), h.committed(p0), "the first row written")
	assert.True(t, h.cl.paused[p0], "the rows decided meanwhile hold the backlog past a quarter")

	h.p.checkBuffer(h.ctx)
	require.NotNil(t, h.p.job, "a tick at once writes them")
	run()
	h.p.checkBuffer(h.ctx)
	h.p.checkBuffer(h.ctx)
	assert.False(t, h.cl.paused[p0], "fetching again once the backlog is written")
	assert.Equal(t, int64(13), h.committed(p0), "every row written")
}

func TestOverlappedCloseFailureKeepsTheBatchAndPauses(t *testing.T) {
	fs := &failingCloses{fail: true}
	h := newHarness(t, func(c *Config[string]) {
		fs.Sink = c.Sink
		c.Sink = fs
	})
	run := h.deferWrites()
	p0 := tp("t", 0)
	h.assign(p0, -1, "")
	h.feed(p0, 0, "w 1 A 1", "w 7 A 2")
	h.tick()
	h.feed(p0, 2, "w 9 A 3") // decided while the failing write runs
	run()
	h.p.poll(context.Background())
	require.Equal(t, int64(-1), h.committed(p0))
	pt := h.p.parts[p0]
	assert.Equal(t, pauseWrite, pt.paused, "decides nothing more until a write succeeds")
	assert.True(t, h.cl.paused[p0])
	assert.Len(t, pt.unwritten, 2, "the batch is kept: A and all of [12:00,12:05)")

	fs.fail = false
	h.tick()
	run()
	h.p.poll(context.Background())
	assert.Zero(t, pt.paused)
	assert.Equal(t, int64(1), h.committed(p0))
	a, ok, err := h.mem.Aggregate(context.Background(), sink.Key{WindowStart: T0, Dimension: "line", DimensionID: "A"})
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, int64(1), a.Count)
}

func TestRevocationWaitsForTheWritesInFlight(t *testing.T) {
	h := newHarness(t, nil)
	h.deferWrites() // never run by the test: the revocation must
	p0 := tp("t", 0)
	h.assign(p0, -1, "")
	h.feed(p0, 0, "ws 1 A 1", "ws 7 A 2")
	h.tick()
	require.NotNil(t, h.p.job)
	h.feed(p0, 2, "ws 9 A 3")

	var revokes []bool
	h.p.s.hooks.write = append(h.p.s.hooks.write, writeRecorder(func(w WriteInfo) { revokes = append(revokes, w.Revoke) }))
	h.p.revoke(context.Background(), h.p.assignedTPs(), false, CommitRevoke)
	require.NoError(t, h.p.fatal())
	assert.Nil(t, h.p.job)
	// The tick's writes (state, close), then the revocation's own (state, close).
	assert.Equal(t, []bool{false, false, true, true}, revokes)
	assert.Equal(t, int64(1), h.committed(p0), "1 and 2 wait for [12:05,12:10), still open")
	assert.Empty(t, h.p.parts)
}

type writeRecorder func(WriteInfo)

func (f writeRecorder) OnWrite(w WriteInfo) { f(w) }

// meetingWrites counts the writes inside the sink at once; each waits (briefly) until want
// of them are inside together.
type meetingWrites struct {
	sink.Sink
	want    int
	mu      sync.Mutex
	inside  int
	most    int
	arrived chan struct{}
}

func (m *meetingWrites) meet(write func() error) error {
	m.mu.Lock()
	m.inside++
	m.most = max(m.most, m.inside)
	if m.inside == m.want {
		close(m.arrived)
	}
	m.mu.Unlock()
	select {
	case <-m.arrived:
	case <-time.After(300 * time.Millisecond):
	}
	err := write()
	m.mu.Lock()
	m.inside--
	m.mu.Unlock()
	return err
}

func (m *meetingWrites) WriteClose(ctx context.Context, b ...sink.CloseBatch) error {
	if registrations(b) {
		return m.Sink.WriteClose(ctx, b...)
	}
	return m.meet(func() error { return m.Sink.WriteClose(ctx, b...) })
}

func (m *meetingWrites) UpsertLatest(ctx context.Context, rows []sink.StateRow) error {
	return m.meet(func() error { return m.Sink.UpsertLatest(ctx, rows) })
}

// A tick's writes (a flush per state table and one call for every partition's close batch)
// run WriteConcurrency at a time; the close call, which writes windows, after the flushes.
func TestWriteConcurrencyRunsATicksWritesAtOnce(t *testing.T) {
	second := sinkfixture.Latest()
	second.Table = "latest2"
	for _, tc := range []struct{ concurrency, most int }{{1, 1}, {3, 2}} {
		mem, err := sinktest.NewMemory(sinktest.MemoryConfig{Aggregates: sinkfixture.Aggregates(),
			States: []sink.StateSpec{sinkfixture.Latest(), second}, Clock: sinkfixture.Now})
		require.NoError(t, err)
		mw := &meetingWrites{Sink: mem, want: 2, arrived: make(chan struct{})}
		h := newHarness(t, func(c *Config[string]) {
			c.Sink = mw
			c.WriteConcurrency = tc.concurrency
		})
		h.mem, h.chk.sink, h.chk.reader = mem, mem, mem // two state tables
		ps := []ledger.TopicPartition{tp("t", 0), tp("t", 1), tp("u", 0)}
		for _, p := range ps {
			h.assign(p, -1, "")
			h.feed(p, 0, "ws 1 A 1", "w 7 A 2")
			h.p.parts[p].state.add(sink.StateRow{Table: second.Table, Key: []any{p.String()}, ObservedAt: T0,
				Values: []any{"x", 1.0, int64(1)}})
		}
		h.tick()
		assert.Equal(t, tc.most, mw.most, "writes inside the sink at once with WriteConcurrency %d", tc.concurrency)
		require.Len(t, h.closes(), 3, "one batch per partition")
		for _, p := range ps {
			assert.Equal(t, int64(1), h.committed(p), "%v: every write applied", p)
		}
		assert.Equal(t, int64(3), h.p.counters.writes.Load(), "two state flushes and one close call")
	}
}

// stuckCloses blocks every close write until its context ends.
type stuckCloses struct{ sink.Sink }

func (s stuckCloses) WriteClose(ctx context.Context, bs ...sink.CloseBatch) error {
	if registrations(bs) {
		return s.Sink.WriteClose(ctx, bs...)
	}
	<-ctx.Done()
	return ctx.Err()
}

func TestRevocationOutOfTimeCancelsTheWritesInFlight(t *testing.T) {
	h := newHarness(t, func(c *Config[string]) {
		c.Sink = stuckCloses{c.Sink}
		c.WriteTimeout = time.Minute
	})
	h.p.spawn = func(f func()) { go f() } // as in Run
	p0 := tp("t", 0)
	h.assign(p0, -1, "")
	h.feed(p0, 0, "w 1 A 1", "w 7 A 2")
	h.tick()
	require.NotNil(t, h.p.job, "the close write is stuck in flight")

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	h.p.revoke(ctx, h.p.assignedTPs(), false, CommitShutdown)
	assert.Less(t, time.Since(start), 10*time.Second, "bounded by the shutdown's context, not WriteTimeout")
	require.NoError(t, h.p.fatal())
	assert.Nil(t, h.p.job)
	assert.Equal(t, int64(-1), h.committed(p0), "nothing is durable: nothing committed")
	assert.Empty(t, h.p.parts)
}

// A flush writes only the tables that have rows, although each partition keeps its buffers,
// emptied, from one flush to the next.
func TestFlushWritesOnlyTablesWithRows(t *testing.T) {
	h := newHarness(t, nil)
	p0 := tp("t", 0)
	h.assign(p0, -1, "")
	pt := h.p.parts[p0]
	row := func(table, key string) sink.StateRow {
		return sink.StateRow{Table: table, Key: []any{key}, ObservedAt: T0, Values: []any{"trip", 1.0, int64(1)}}
	}
	for _, r := range []sink.StateRow{row("a", "v1"), row("a", "v2"), row("b", "v1")} {
		pt.state.add(r)
	}
	job := h.p.prepare(nil, false)
	require.NotNil(t, job)
	assert.Equal(t, []string{"a", "b"}, job.tables())
	assert.Zero(t, pt.state.len("a"), "emptied")
	assert.GreaterOrEqual(t, cap(pt.state.tables["a"].rows), 2, "and kept for the next flush")
	assert.Equal(t, []sink.StateRow{row("a", "v1"), row("a", "v2")}, job.rowsOf("a"))

	pt.state.add(row("a", "v1"))
	job = h.p.prepare(nil, false)
	require.NotNil(t, job)
	assert.Equal(t, []string{"a"}, job.tables(), "b was sized but given no rows: no empty write")
}

// A commit that does not return within commitTimeout is taken as failed, nothing of it is
// marked committed, and no other commit is sent while it runs; once it returns, the next tick
// commits again.
func TestCommitTimeout(t *testing.T) {
	h := newHarness(t, nil)
	h.p.s.commitTimeout = 20 * time.Millisecond
	p0, hold := holdCommit(h)
	start := time.Now()
	h.tick()
	assert.Less(t, time.Since(start), time.Second, "the tick did not wait for the commit")
	assert.Equal(t, int64(1), h.p.counters.snapshot().CommitFailures)
	h.chk.mu.Lock()
	last := h.chk.commits[len(h.chk.commits)-1]
	h.chk.mu.Unlock()
	require.ErrorIs(t, last.Err, ErrCommitTimeout)

	h.feed(p0, 2, "s 3")
	h.tick()
	h.cl.mu.Lock()
	assert.Len(t, h.cl.commits, 1, "no second commit while the first runs")
	h.cl.hold = nil
	h.cl.mu.Unlock()
	close(hold)
	require.Eventually(t, func() bool { return !h.p.commitBusy() }, time.Second, time.Millisecond)
	h.tick()
	assert.Equal(t, int64(3), h.committed(p0), "committed again once the first returned")
}

// A stop requested while the loop waits for a commit ends the wait at once, however long
// commitTimeout is: the commit is left behind as failed, and the shutdown's own commit waits
// for it, within its deadline, instead of being skipped.
func TestCommitLeftBehindOnStop(t *testing.T) {
	stop := make(chan struct{})
	h := newHarness(t, nil)
	h.p.s.commitTimeout = time.Hour
	h.p.stopRequested = stop
	_, hold := holdCommit(h)
	ticked := make(chan struct{})
	go func() {
		h.tick()
		close(ticked)
	}()
	require.Eventually(t, func() bool {
		h.cl.mu.Lock()
		defer h.cl.mu.Unlock()
		return len(h.cl.commits) == 1
	}, time.Second, time.Millisecond, "the tick's commit was sent")
	close(stop)
	select {
	case <-ticked:
	case <-time.After(5 * time.Second):
		t.Fatal("the tick still waits for its commit after the stop")
	}
	h.chk.mu.Lock()
	last := h.chk.commits[len(h.chk.commits)-1]
	h.chk.mu.Unlock()
	require.ErrorIs(t, last.Err, ErrCommitTimeout)
	assert.True(t, h.p.commitBusy())

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	h.p.waitCommit(ctx)
	assert.Less(t, time.Since(start), time.Second, "waitCommit is bounded by its context")
	h.cl.mu.Lock()
	h.cl.hold = nil
	h.cl.mu.Unlock()
	close(hold)
	h.p.waitCommit(context.Background())
	assert.False(t, h.p.commitBusy(), "waitCommit returns once the commit left behind did")
}

// holdCommit assigns t[0] with two messages decided and makes the client hold every commit
// until the returned channel is closed.
func holdCommit(h *harness) (ledger.TopicPartition, chan struct{}) {
	p0 := tp("t", 0)
	h.assign(p0, -1, "")
	h.feed(p0, 0, "s 1", "s 2")
	hold := make(chan struct{})
	h.cl.mu.Lock()
	h.cl.hold = hold
	h.cl.mu.Unlock()
	return p0, hold
}

// deadlineSink makes every WriteClose take need before it writes, failing with the context's
// error if its deadline comes first, and records each call's deadline.
type deadlineSink struct {
	sink.Sink
	need time.Duration

	mu        sync.Mutex
	deadlines []time.Duration
}

func (s *deadlineSink) WriteClose(ctx context.Context, batches ...sink.CloseBatch) error {
	d, _ := ctx.Deadline()
	s.mu.Lock()
	s.deadlines = append(s.deadlines, time.Until(d).Round(10*time.Millisecond))
	need := s.need
	s.mu.Unlock()
	select {
	case <-time.After(need):
		return s.Sink.WriteClose(ctx, batches...)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A round of writes that runs out of time is retried with twice the deadline, up to a second
// under half of max.poll.interval.ms, so that a write larger than WriteTimeout allows
// completes; the deadline is back to WriteTimeout once a round succeeds.
func TestWriteDeadlineGrowsAfterTimeouts(t *testing.T) {
	slow := &deadlineSink{need: 250 * time.Millisecond}
	h := newHarness(t, func(c *Config[string]) {
		slow.Sink = c.Sink
		c.Sink = slow
		c.WriteTimeout = 100 * time.Millisecond
		c.Kafka["max.poll.interval.ms"] = 2400 // the deadline may grow to 200 ms only
	})
	p0 := tp("t", 0)
	h.assign(p0, -1, "") // registers the partition, within AssignTimeout
	slow.mu.Lock()
	slow.deadlines = nil
	slow.mu.Unlock()
	h.feed(p0, 0, "w 1 A 1", "w 7 A 2")
	for range 3 {
		h.tick()
	}
	assert.Equal(t, int64(-1), h.committed(p0), "the write never fit its deadline")
	assert.Equal(t, 200*time.Millisecond, h.p.writeTimeout(), "capped under half of max.poll.interval.ms")

	slow.mu.Lock()
	slow.need = 150 * time.Millisecond
	slow.mu.Unlock()
	h.tick()
	assert.Equal(t, int64(1), h.committed(p0), "the write fit the grown deadline")
	assert.Equal(t, 100*time.Millisecond, h.p.writeTimeout(), "reset once a round succeeded")
	slow.mu.Lock()
	defer slow.mu.Unlock()
	assert.Equal(t, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond,
		200 * time.Millisecond}, slow.deadlines)
	assert.Contains(t, h.logs.String(), "writes ran out of time")
}

// orderedWrites records the order in which the writes start ("state <table>", "close").
// With absorb, state rows are taken without being passed on (tables the memory sink does
// not know); failStates fails that many state writes.
type orderedWrites struct {
	sink.Sink
	absorb     bool
	mu         sync.Mutex
	failStates int
	started    []string
}

func (o *orderedWrites) enter(kind string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.started = append(o.started, kind)
}

func (o *orderedWrites) UpsertLatest(ctx context.Context, rows []sink.StateRow) error {
	o.enter("state " + rows[0].Table)
	o.mu.Lock()
	fail := o.failStates > 0
	o.failStates--
	o.mu.Unlock()
	switch {
	case fail:
		return errors.New("injected state failure")
	case o.absorb:
		return nil
	}
	return o.Sink.UpsertLatest(ctx, rows)
}

func (o *orderedWrites) WriteClose(ctx context.Context, bs ...sink.CloseBatch) error {
	if !registrations(bs) {
		o.enter("close")
	}
	return o.Sink.WriteClose(ctx, bs...)
}

func (o *orderedWrites) order() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.started)
}

// A tick's state writes start largest first (by their estimated bytes), so that the longest
// does not wait behind shorter ones, and the close follows them, however large it is.
func TestWritesStateLargestFirstThenTheClose(t *testing.T) {
	for _, concurrency := range []int{1, 2} {
		t.Run(fmt.Sprint("concurrency ", concurrency), func(t *testing.T) {
			o := &orderedWrites{absorb: true}
			h := newHarness(t, func(c *Config[string]) { o.Sink = c.Sink; c.Sink = o; c.WriteConcurrency = concurrency })
			p0 := tp("t", 0)
			h.assign(p0, -1, "")
			var msgs []string
			for i := range 40 {
				msgs = append(msgs, fmt.Sprintf("w 1 K%d 1", i))
			}
			h.feed(p0, 0, append(msgs, "w 7 A 2")...)
			pt := h.p.parts[p0]
			row := func(table, key string) sink.StateRow {
				return sink.StateRow{Table: table, Key: []any{key}, ObservedAt: T0, Values: []any{"trip", 1.0, int64(1)}}
			}
			for _, r := range []sink.StateRow{row("a", "v1"), row("b", "v1"), row("b", "v2"), row("b", "v3")} {
				pt.state.add(r)
			}
			h.tick()
			require.NoError(t, h.p.fatal())
			order := o.order()
			if concurrency == 1 {
				assert.Equal(t, []string{"state b", "state a", "close"}, order)
			} else {
				assert.ElementsMatch(t, []string{"state b", "state a"}, order[:2], "both state writes at once")
				assert.Equal(t, []string{"close"}, order[2:])
			}
			assert.Len(t, h.closes(), 1, "the window written")
		})
	}
}

// A close is not committed when a state write of its tick failed: its messages' windows stay
// unwritten (a replay would take them as late and drop their state rows), the partials wait
// for the next tick, and nothing is committed until both are written. A gated close is made
// beside the state and rolled back; a plain one is not attempted. Neither counts as a failed
// write: the sink did not fail it.
func TestCloseWaitsForTheStateOfItsTick(t *testing.T) {
	for _, gated := range []bool{false, true} {
		t.Run(fmt.Sprint("gated ", gated), func(t *testing.T) {
			o := &orderedWrites{failStates: 1}
			var s sink.Sink = o
			if gated {
				s = &gatedWrites{orderedWrites: o}
			}
			h := newHarness(t, func(c *Config[string]) { o.Sink = c.Sink; c.Sink = s; c.WriteConcurrency = 2 })
			p0 := tp("t", 0)
			h.assign(p0, -1, "")
			h.feed(p0, 0, "ws 1 A 1", "ws 7 A 2") // the second closes [12:00,12:05) at the tick
			h.tick()
			require.NoError(t, h.p.fatal())
			first := []string{"state " + sinkfixture.StateTable}
			if gated {
				first = append(first, "state done", "close") // the close made, then refused at its gate
			}
			assert.ElementsMatch(t, first, o.order())
			assert.Empty(t, h.closes(), "no window written")
			assert.Equal(t, int64(-1), h.committed(p0))
			assert.Equal(t, int64(1), h.p.counters.snapshot().WriteFailures, "the state write only")

			h.tick()
			assert.ElementsMatch(t, first, o.order()[:len(first)])
			assert.Contains(t, o.order()[len(first):], "close")
			assert.NotContains(t, o.order(), "commit "+sinkfixture.StateTable)
			assert.Len(t, h.closes(), 1, "written with the next tick")
			assert.Equal(t, int64(1), h.committed(p0), "the second message waits in its open window")
		})
	}
}

// gatedWrites is orderedWrites with sink.GatedWindowWriter: a close records "close" when it
// is made, before its gate, and "commit" once the gate let it through; a state write records
// "state done" when it returned. With meet set, a state write first waits (a second at most)
// for a close to be made, so that a close made beside it is seen so.
type gatedWrites struct {
	*orderedWrites
	meet    chan struct{}
	entered sync.Once
}

func (g *gatedWrites) UpsertLatest(ctx context.Context, rows []sink.StateRow) error {
	if g.meet != nil {
		select {
		case <-g.meet:
		case <-time.After(time.Second):
		}
	}
	err := g.orderedWrites.UpsertLatest(ctx, rows)
	g.enter("state done")
	return err
}

func (g *gatedWrites) WriteCloseGated(ctx context.Context, gate func(context.Context) error, bs ...sink.CloseBatch) error {
	g.enter("close")
	if g.meet != nil {
		g.entered.Do(func() { close(g.meet) })
	}
	if err := gate(ctx); err != nil {
		return fmt.Errorf("refused: %w", err)
	}
	g.enter("commit")
	return g.Sink.WriteClose(ctx, bs...)
}

// With a sink.GatedWindowWriter and WriteConcurrency above 1, a close that writes windows is
// made beside its tick's state writes, and commits only once they all returned nil; at
// WriteConcurrency 1 it is written with WriteClose after them.
func TestGatedCloseIsMadeBesideTheStateAndCommitsAfterIt(t *testing.T) {
	state := "state " + sinkfixture.StateTable
	for _, tc := range []struct {
		concurrency int
		want        []string
	}{
		{1, []string{state, "state done", "close"}}, // WriteClose, not gated
		{2, []string{"close", state, "state done", "commit"}},
	} {
		t.Run(fmt.Sprint("concurrency ", tc.concurrency), func(t *testing.T) {
			g := &gatedWrites{orderedWrites: &orderedWrites{}}
			if tc.concurrency > 1 {
				g.meet = make(chan struct{})
			}
			h := newHarness(t, func(c *Config[string]) { g.Sink = c.Sink; c.Sink = g; c.WriteConcurrency = tc.concurrency })
			p0 := tp("t", 0)
			h.assign(p0, -1, "")
			h.feed(p0, 0, "ws 1 A 1", "ws 7 A 2")
			h.tick()
			require.NoError(t, h.p.fatal())
			assert.Equal(t, tc.want, g.order())
			assert.Len(t, h.closes(), 1, "the window written")
			assert.Equal(t, int64(1), h.committed(p0))
		})
	}
}
