package consumer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/streamledger/streamledger/sink"
)

// writeJob is one round of sink writes: the buffered state rows, one call per table, and the
// close batches of partitions, all in one call. It is prepared on the loop at a barrier
// (windows closed, partials serialized), made by run, off the loop unless SyncWrites is set or
// a rebalance needs it at once, and applied on the loop at a barrier by complete. Only
// complete touches the ledgers, so an entry becomes committable only after the write that
// makes it durable returned nil, wherever the write ran.
//
// At most one job is in flight. Messages decided meanwhile join the next one: their state
// rows carry the next flush sequence, their windows close at the next tick. Rebalances and
// the shutdown wait for the job in flight before they write and commit, so a job never
// outlives the ownership of a partition it writes.
type writeJob[K comparable] struct {
	revoke bool // made while partitions are given up

	seq    uint64       // flush sequence of the state rows; 0 if the job flushes none
	states []stateWrite // one per table, sorted by table

	closes []*part[K]        // the partitions of the first len(closes) batches, in order
	batch  []sink.CloseBatch // one call, atomic: closes, then registrations of other partitions
	bytes  int64             // estimate of the memory the batch's partials hold
	closed writeResult
	held   int64 // estimate of the memory the job's rows and partials hold, set at launch

	run    func() // makes the writes once; a later call waits for the first
	cancel func() // cancels the writes' context

	timeout  time.Duration // the writes' deadline, set at launch
	timedOut bool          // the deadline ended the writes
}

// stateWrite is one state table's flush in a job.
type stateWrite struct {
	table string
	rows  []sink.StateRow
	bytes int64 // the rows' estimated memory (rowBytes)
	res   writeResult
}

// writeResult is the outcome of one write. A write that was not attempted (the job ran out
// of time first) fails without being reported to the hooks.
type writeResult struct {
	made     bool
	err      error
	duration time.Duration
}

// prepare builds the job of a tick, or of a revocation of parts: the state rows buffered so
// far by every partition (all of them: a flush is global), then for each of parts its idle
// advance, the windows it closes and its progress. It runs at a barrier and returns nil when
// there is nothing to write.
func (p *processor[K]) prepare(parts []*part[K], revoke bool) *writeJob[K] {
	job := &writeJob[K]{revoke: revoke}
	if state, bytes := p.takeState(); len(state) > 0 {
		job.seq = p.seq
		p.seq++
		for _, t := range slices.Sorted(maps.Keys(state)) {
			job.states = append(job.states, stateWrite{table: t, rows: state[t], bytes: bytes[t]})
		}
	}
	for _, pt := range parts {
		b, ok := p.closeBatch(pt)
		if p.fatal() != nil {
			return nil
		}
		if ok {
			job.closes = append(job.closes, pt)
			job.batch = append(job.batch, b)
			job.bytes += pt.unwrittenBytes
			pt.unwritten, pt.unwrittenBytes = nil, 0
		}
	}
	if len(job.batch) > 0 || len(p.toRegister) > 0 {
		job.batch = append(job.batch, p.registrations(job.batch)...)
	}
	if job.seq == 0 && len(job.batch) == 0 {
		return nil
	}
	return job
}

// takeState returns the rows of a failed flush and every partition's buffered rows, by
// table: per table, the retried rows first, then each partition's in partition order, so
// that the rows (and which of two rows of a key with the same time wins) do not depend on
// how the partitions' decisions interleaved. Each partition keeps its buffer, emptied, for
// the next flush. It also returns the rows' estimated bytes (rowBytes) by table, from the
// estimates kept as they were buffered or failed, so that no row is walked again for it.
func (p *processor[K]) takeState() (map[string][]sink.StateRow, map[string]int64) {
	sizes := make(map[string]int, len(p.stateRetry)+2)
	for t, rows := range p.stateRetry {
		sizes[t] += len(rows)
	}
	for _, pt := range p.order {
		for name, t := range pt.state.tables {
			sizes[name] += len(t.rows)
		}
	}
	out := make(map[string][]sink.StateRow, len(sizes))
	for t, n := range sizes {
		if n > 0 {
			out[t] = append(make([]sink.StateRow, 0, n), p.stateRetry[t]...)
		}
	}
	clear(p.stateRetry)
	bytes := maps.Clone(p.retryBytes)
	clear(p.retryBytes)
	for _, pt := range p.order {
		pt.state.appendTo(out, bytes)
		pt.stateBytes.Store(0)
	}
	return out, bytes
}

// launch makes job the one in flight and starts its writes: on a goroutine of their own, or
// here when inline (a revocation) or SyncWrites is set.
func (p *processor[K]) launch(ctx context.Context, job *writeJob[K], inline bool) {
	p.job = job
	job.timeout = p.writeTimeout()
	job.held = job.bytes
	for _, w := range job.states {
		job.held += w.bytes
	}
	p.live.writingFrom.CompareAndSwap(0, time.Now().UnixNano())
	ctx, job.cancel = context.WithCancel(ctx)
	job.run = sync.OnceFunc(func() {
		p.write(ctx, job)
		job.cancel()
		p.jobDone <- struct{}{}
	})
	if inline || p.s.SyncWrites {
		job.run()
		return
	}
	p.spawn(job.run)
}

// write makes the job's writes: each state table's flush, WriteConcurrency of them at a
// time and the largest (by estimated bytes) first, and the close batches in one call. It
// runs off the loop and touches nothing but the job (each write its own result), the sink
// and the settings.
//
// A close that writes windows commits after the state writes, and not at all if one failed:
// a message with both window values and state rows is late on a replay once its window is
// written, so its rows would be written by no one if the close committed and the flush that
// holds them did not (a crash between the two). Its partials then wait for the next tick, as
// after a failed close. With a sink.GatedWindowWriter and WriteConcurrency above 1 the close
// is made beside the state writes (which then have one write fewer at a time) and its commit
// waits for them; otherwise it starts once they are done. A close that writes no window
// (progress, registrations) makes no decided message late and runs beside the state writes.
func (p *processor[K]) write(ctx context.Context, job *writeJob[K]) {
	ctx, cancel := context.WithTimeout(ctx, job.timeout)
	defer cancel()
	defer func() { job.timedOut = errors.Is(ctx.Err(), context.DeadlineExceeded) }()
	runs := job.stateRuns(ctx, p.s.Sink)
	n := p.s.WriteConcurrency
	gated, canGate := p.s.Sink.(sink.GatedWindowWriter)
	switch {
	case len(job.batch) == 0:
		runAll(runs, n)
	case !job.writesWindows():
		runAll(append(runs, job.closeRun(ctx, p.s.Sink.WriteClose)), n)
	case len(runs) > 0 && canGate && n > 1:
		stated := make(chan struct{})
		gate := func(ctx context.Context) error {
			select {
			case <-stated:
				return job.stateErr()
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		var closing sync.WaitGroup
		closing.Go(job.closeRun(ctx, func(ctx context.Context, bs ...sink.CloseBatch) error {
			return gated.WriteCloseGated(ctx, gate, bs...)
		}))
		runAll(runs, n-1)
		close(stated)
		closing.Wait()
		if errors.Is(job.closed.err, errStateFirst) {
			job.closed.made = false // rolled back for the state, as if not attempted
		}
	default:
		runAll(runs, n)
		if err := job.stateErr(); err != nil {
			job.closed = writeResult{err: err}
			return
		}
		job.closeRun(ctx, p.s.Sink.WriteClose)()
	}
}

// stateRuns returns the job's state writes, the largest (by estimated bytes) first.
func (job *writeJob[K]) stateRuns(ctx context.Context, s sink.StateWriter) []func() {
	order := make([]*stateWrite, len(job.states))
	for i := range job.states {
		order[i] = &job.states[i]
	}
	slices.SortStableFunc(order, func(a, b *stateWrite) int { return cmp.Compare(b.bytes, a.bytes) })
	runs := make([]func(), 0, len(order)+1)
	for _, w := range order {
		runs = append(runs, func() { timed(ctx, &w.res, func() error { return s.UpsertLatest(ctx, w.rows) }) })
	}
	return runs
}

// closeRun returns the job's close write through write.
func (job *writeJob[K]) closeRun(ctx context.Context, write func(context.Context, ...sink.CloseBatch) error) func() {
	return func() { timed(ctx, &job.closed, func() error { return write(ctx, job.batch...) }) }
}

// timed makes a write with f and stores its result and duration in res; when ctx has ended
// it makes none, and the error keeps what it would have written for the next tick.
func timed(ctx context.Context, res *writeResult, f func() error) {
	if err := ctx.Err(); err != nil {
		*res = writeResult{err: err}
		return
	}
	start := time.Now()
	err := f()
	*res = writeResult{made: true, err: err, duration: time.Since(start)}
}

// stateErr returns nil when every state write of the job succeeded, and otherwise an error
// wrapping errStateFirst and the first failure.
func (job *writeJob[K]) stateErr() error {
	for _, w := range job.states {
		if w.res.err != nil {
			return fmt.Errorf("%w: %w", errStateFirst, w.res.err)
		}
	}
	return nil
}

// writesWindows reports whether the job's close batches hold partials.
func (job *writeJob[K]) writesWindows() bool {
	for _, b := range job.batch {
		if len(b.Partials) > 0 {
			return true
		}
	}
	return false
}

// errStateFirst fails a close batch not written because a state write of its job failed.
var errStateFirst = errors.New("consumer: close not written: a state flush of the same tick failed")

// writeTimeout is the deadline of the next round of writes: WriteTimeout, doubled for every
// round in a row that ran out of time, at most maxWriteTimeout.
func (p *processor[K]) writeTimeout() time.Duration {
	d := p.s.WriteTimeout
	for range p.writesTimedOut {
		if d >= p.s.maxWriteTimeout {
			break
		}
		d *= 2
	}
	return min(d, max(p.s.maxWriteTimeout, p.s.WriteTimeout))
}

// runAll runs fs, at most n at a time (one after another when n <= 1).
func runAll(fs []func(), n int) {
	if n <= 1 || len(fs) <= 1 {
		for _, f := range fs {
			f()
		}
		return
	}
	next := make(chan func())
	var wg sync.WaitGroup
	for range min(n, len(fs)) {
		wg.Go(func() {
			for f := range next {
				f()
			}
		})
	}
	for _, f := range fs {
		next <- f
	}
	close(next)
	wg.Wait()
}

// collect applies the job in flight if its writes are done. It reports whether it did.
func (p *processor[K]) collect() bool {
	if p.job == nil {
		return false
	}
	select {
	case <-p.jobDone:
	default:
		return false
	}
	p.barrier()
	p.complete()
	return true
}

// await waits for the job in flight, running it here if it has not started, and applies it.
// When ctx ends first (a shutdown out of time) it cancels the writes, which then fail and are
// kept like any failed write: the wait is bounded by ctx as well as by WriteTimeout.
func (p *processor[K]) await(ctx context.Context) {
	if p.job == nil {
		return
	}
	stop := context.AfterFunc(ctx, p.job.cancel)
	p.job.run()
	<-p.jobDone
	stop()
	p.barrier()
	p.complete()
}

// complete applies the outcome of the job in flight on the loop, at a barrier. A state flush
// that fully succeeded makes its sequence durable in every ledger; rows of a table that failed
// are written with the next flush, whose success covers this sequence too. Close batches that
// succeeded move their partitions' closed_through; when they failed they are kept (merged
// with later closes) and their partitions decide nothing more until a write succeeds.
func (p *processor[K]) complete() {
	job := p.job
	p.job = nil
	p.live.wrote(time.Now(), job.ok())
	switch {
	case job.ok():
		p.writesTimedOut = 0
	case job.timedOut:
		p.writesTimedOut++
		p.log.Warn("writes ran out of time; the next round gets a longer deadline",
			"deadline", job.timeout, "next", p.writeTimeout())
	}
	if !p.completeState(job) {
		return
	}
	if len(job.batch) > 0 {
		p.completeCloses(job)
	}
}

// ok reports whether every write of the job succeeded.
func (job *writeJob[K]) ok() bool {
	for _, w := range job.states {
		if w.res.err != nil {
			return false
		}
	}
	return len(job.batch) == 0 || job.closed.err == nil
}

// completeState applies the state flushes of job; false means Run must stop.
func (p *processor[K]) completeState(job *writeJob[K]) bool {
	flushed := true
	for _, w := range job.states {
		r := w.res
		if r.made {
			p.wrote(WriteInfo{Kind: WriteState, Table: w.table, Rows: len(w.rows), Revoke: job.revoke, Duration: r.duration, Err: r.err})
		}
		if r.err == nil {
			continue
		}
		flushed = false
		if r.made {
			p.log.Warn("state flush failed; retrying at the next tick", "table", w.table, "rows", len(w.rows), "error", r.err)
		}
		p.stateRetry[w.table] = append(w.rows, p.stateRetry[w.table]...)
		p.retryBytes[w.table] += w.bytes
	}
	if job.seq == 0 || !flushed {
		return true
	}
	for _, pt := range p.order {
		if err := pt.led.Flushed(job.seq); err != nil {
			p.fail(err, "ledger flushed", "partition", pt.tp.String())
			return false
		}
	}
	return true
}

// completeCloses applies the outcome of the job's close batches, written in one call.
func (p *processor[K]) completeCloses(job *writeJob[K]) {
	r := job.closed
	if r.made {
		p.counters.writes.Add(1)
		if r.err != nil {
			p.counters.writeFail.Add(1)
		}
	}
	if r.err != nil && r.made {
		p.log.Warn("close write failed; partitions paused, retrying at the next tick",
			"partitions", len(job.batch), "error", r.err)
	}
	if r.err == nil {
		p.registeredAll(job.batch)
	}
	for i, pt := range job.closes {
		b := job.batch[i]
		if r.made {
			p.hookWrite(WriteInfo{Kind: WriteClose, Source: pt.tp, Rows: len(b.Partials), ClosedThrough: b.ClosedThrough,
				Revoke: job.revoke, Duration: r.duration, Err: r.err})
		}
		if p.parts[pt.tp] != pt {
			continue // given up; cannot happen while rebalances wait for the job
		}
		if r.err != nil {
			pt.unwritten = append(b.Partials, pt.unwritten...)
			pt.unwrittenBytes = partialBytes(pt.unwritten)
			p.pause(pt, pauseWrite)
			continue
		}
		if b.Empty && b.ClosedThrough.IsZero() {
			pt.emptySent = true
			continue
		}
		pt.written, pt.hasWritten = b.ClosedThrough, true
		if err := pt.led.CloseThrough(b.ClosedThrough); err != nil {
			p.fail(err, "ledger close through", "partition", pt.tp.String())
			return
		}
		// The ledger learns an idle advance once it is written, or before from a message decided
		// since: a commit then carries it only past that message, whose decision depended on
		// it, and never past the entries of the windows it closed, which wait for this write.
		p.setWatermark(pt)
		p.unpause(pt, pauseWrite)
	}
}

// wrote counts one sink call and reports it to the write hooks.
func (p *processor[K]) wrote(w WriteInfo) {
	p.counters.writes.Add(1)
	if w.Err != nil {
		p.counters.writeFail.Add(1)
	}
	p.hookWrite(w)
}

func (p *processor[K]) hookWrite(w WriteInfo) {
	for _, h := range p.s.hooks.write {
		h.OnWrite(w)
	}
}

// poll is the loop's side of a job in flight: once its writes are done it applies them,
// commits what they made durable, and runs the tick that waited for them, if any. While the
// writes still run, it waits for them if holdsLoop says so; otherwise the loop goes on
// deciding, and a due tick runs as soon as the writes are done.
func (p *processor[K]) poll(ctx context.Context) {
	if p.job != nil && p.holdsLoop() {
		start := time.Now()
		p.await(ctx)
		p.waited += time.Since(start)
	} else if !p.collect() {
		return
	}
	if p.fatal() != nil || ctx.Err() != nil {
		return
	}
	if p.tickDue {
		p.tickDue = false
		p.tick(ctx, CommitTick)
		return
	}
	p.drainReports()
	p.retrySeeks()
	p.commit(ctx, CommitTick, p.tracker.AppendCommits(p.commitBuf[:0]))
}

// holdsLoop reports whether the loop waits, deciding nothing, for the writes in flight.
// Without a buffer bound it waits when a tick is due: the consumer then decides at most one
// tick's messages ahead of the sink, which bounds the rows and ledger entries waiting for
// writes. With one, the bound does that: the loop goes on deciding while the sink writes, so
// that deciding and writing overlap, and a tick due meanwhile takes all that was decided in
// one round of writes (in which a state row overwritten meanwhile is written once). It waits,
// tick due or not, once the write backlog passes half the budget, or a quarter of it while
// the backlog and the open windows (windowCharge) together pass the whole budget. Below that
// what the loop decides meanwhile fits beside the writes, which drop their share when they
// are done; a backlog they leave past a quarter pauses every partition until a tick has
// written it (checkBuffer).
//
// Waiting, rather than pausing the partitions, keeps what the client has fetched: a paused
// partition's prefetch is dropped, and on resume the client fetches it again, which leaves
// the workers with nothing to decide for a round trip or more after every pause. Meanwhile
// the client fills its prefetch, its share of the budget, and then stops fetching. The wait
// ends with the writes, whose deadline (WriteTimeout) is under half of max.poll.interval.ms,
// so the group does not evict the consumer for it.
func (p *processor[K]) holdsLoop() bool {
	if p.s.buffer <= 0 {
		return p.tickDue
	}
	windows, backlog := p.buffered()
	if backlog > p.s.buffer/2 {
		return true
	}
	return backlog > p.s.buffer/4 && windowCharge(windows)+backlog > p.s.buffer
}
