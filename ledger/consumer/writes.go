package consumer

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/streamledger/streamledger/sink"
)

// writeJob is one round of sink writes: the buffered state rows and the close batches of
// partitions. It is prepared on the loop (windows closed, partials serialized), made by run,
// off the loop unless SyncWrites is set or a rebalance needs it at once, and applied on the
// loop by complete. Only complete touches the ledgers, so an entry becomes committable only
// after the write that makes it durable returned nil, wherever the write ran.
//
// At most one job is in flight. Messages decided meanwhile join the next one: their state
// rows carry the next flush sequence, their windows close at the next tick. Rebalances and
// the shutdown wait for the job in flight before they write and commit, so a job never
// outlives the ownership of a partition it writes.
type writeJob[K comparable] struct {
	revoke bool // made while partitions are given up

	seq    uint64 // flush sequence of the state rows; 0 if the job flushes none
	tables []string
	state  map[string][]sink.StateRow
	states []writeResult

	closes []closeWrite[K]

	run    func() // makes the writes once; a later call waits for the first
	cancel func() // cancels the writes' context
}

// closeWrite is one partition's close batch in a job.
type closeWrite[K comparable] struct {
	pt    *part[K]
	batch sink.CloseBatch
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
// far (all of them: a flush is global), then for each partition its idle advance, the windows
// it closes and its progress. It returns nil when there is nothing to write.
func (p *processor[K]) prepare(parts []*part[K], revoke bool) *writeJob[K] {
	job := &writeJob[K]{revoke: revoke}
	if p.stateRows > 0 {
		job.seq, job.state = p.seq, p.state
		p.seq++
		p.state, p.stateRows = make(map[string][]sink.StateRow, len(job.state)), 0
		for t, rows := range job.state {
			if len(rows) == 0 {
				delete(job.state, t) // sized for this flush (below) but given no rows
				continue
			}
			job.tables = append(job.tables, t)
			// The next flush most likely holds about as many rows: growing to that by
			// appending copied each row twice over (14% of the bytes allocated at 1x).
			p.state[t] = make([]sink.StateRow, 0, len(rows))
		}
		slices.Sort(job.tables)
		job.states = make([]writeResult, len(job.tables))
	}
	for _, pt := range parts {
		b, ok := p.closeBatch(pt)
		if p.fatal != nil {
			return nil
		}
		if ok {
			job.closes = append(job.closes, closeWrite[K]{pt: pt, batch: b})
			pt.unwritten = nil
		}
	}
	if job.seq == 0 && len(job.closes) == 0 {
		return nil
	}
	return job
}

// closeBatch runs one partition's share of a tick on the loop: the idle advance, then the
// windows the watermark closes, serialized. It returns the batch to write (the closed partials
// not yet written, kept from failed writes too, with the progress) when there is something
// new to write.
func (p *processor[K]) closeBatch(pt *part[K]) (sink.CloseBatch, bool) {
	p.position(pt)
	if p.s.Sink == nil {
		return sink.CloseBatch{}, false // no windows, no progress to write
	}
	pt.wm.Tick()
	wm, ok := pt.wm.Watermark()
	if !ok {
		return sink.CloseBatch{}, false
	}
	if closed := pt.win.Close(wm); len(closed) > 0 {
		sp, err := p.toSink(closed)
		if err != nil {
			p.fail(err, "serialize closed windows", "partition", pt.tp.String())
			return sink.CloseBatch{}, false
		}
		pt.unwritten = append(pt.unwritten, sp...)
	}
	for end, ow := range pt.open {
		if end <= wm.UnixNano() {
			pt.openEntries -= ow.entries
			delete(pt.open, end)
		}
	}
	if len(pt.unwritten) == 0 && pt.hasWritten && !wm.After(pt.written) {
		return sink.CloseBatch{}, false
	}
	return sink.CloseBatch{Source: pt.tp, ClosedThrough: wm, Partials: pt.unwritten}, true
}

// launch makes job the one in flight and starts its writes: on a goroutine of their own, or
// here when inline (a revocation) or SyncWrites is set.
func (p *processor[K]) launch(ctx context.Context, job *writeJob[K], inline bool) {
	p.job = job
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

// write makes the job's writes: the state tables (sorted), then the partitions' close
// batches, WriteConcurrency of them at a time. It runs off the loop and touches nothing but
// the job (each write its own result), the sink and the settings.
func (p *processor[K]) write(ctx context.Context, job *writeJob[K]) {
	ctx, cancel := context.WithTimeout(ctx, p.s.WriteTimeout)
	defer cancel()
	writes := make([]func(), 0, len(job.tables)+len(job.closes))
	timed := func(res *writeResult, f func() error) func() {
		return func() {
			if err := ctx.Err(); err != nil {
				*res = writeResult{err: err} // out of time: kept for the next tick
				return
			}
			start := time.Now()
			err := f()
			*res = writeResult{made: true, err: err, duration: time.Since(start)}
		}
	}
	for i, table := range job.tables {
		writes = append(writes, timed(&job.states[i], func() error {
			return p.s.Sink.UpsertLatest(ctx, table, job.state[table])
		}))
	}
	for i := range job.closes {
		c := &job.closes[i]
		writes = append(writes, timed(&c.res, func() error { return p.s.Sink.WriteClose(ctx, c.batch) }))
	}
	n := max(p.s.WriteConcurrency, 1)
	if n == 1 || len(writes) == 1 {
		for _, w := range writes {
			w()
		}
		return
	}
	next := make(chan func())
	var wg sync.WaitGroup
	for range min(n, len(writes)) {
		wg.Go(func() {
			for w := range next {
				w()
			}
		})
	}
	for _, w := range writes {
		next <- w
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
	p.complete()
}

// complete applies the outcome of the job in flight on the loop. A state flush that fully
// succeeded makes its sequence durable in every ledger; rows of a table that failed go back to
// the buffer and are written with the next flush, whose success covers this sequence too. A
// close batch that succeeded moves its partition's closed_through; one that failed is kept
// (merged with later closes) and its partition decides nothing more until a write succeeds.
func (p *processor[K]) complete() {
	job := p.job
	p.job = nil
	flushed := true
	for i, table := range job.tables {
		rows, r := job.state[table], job.states[i]
		if r.made {
			p.wrote(WriteInfo{Kind: WriteState, Table: table, Rows: len(rows), Revoke: job.revoke, Duration: r.duration, Err: r.err})
		}
		if r.err == nil {
			continue
		}
		flushed = false
		if r.made {
			p.log.Warn("state flush failed; retrying at the next tick", "table", table, "rows", len(rows), "error", r.err)
		}
		p.state[table] = append(rows, p.state[table]...)
		p.stateRows += len(rows)
	}
	if job.seq > 0 && flushed {
		for _, pt := range p.order {
			if err := pt.led.Flushed(job.seq); err != nil {
				p.fail(err, "ledger flushed", "partition", pt.tp.String())
				return
			}
		}
	}
	for _, c := range job.closes {
		pt, b, r := c.pt, c.batch, c.res
		if r.made {
			p.wrote(WriteInfo{Kind: WriteClose, Source: pt.tp, Rows: len(b.Partials), ClosedThrough: b.ClosedThrough,
				Revoke: job.revoke, Duration: r.duration, Err: r.err})
		}
		if p.parts[pt.tp] != pt {
			continue // given up; cannot happen while rebalances wait for the job
		}
		if r.err != nil {
			if r.made {
				p.log.Warn("close write failed; partition paused, retrying at the next tick",
					"partition", pt.tp.String(), "partials", len(b.Partials), "closed_through", b.ClosedThrough, "error", r.err)
			}
			pt.unwritten = append(b.Partials, pt.unwritten...)
			p.pause(pt, pauseWrite)
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

// poll is the loop's side of a job in flight: once its writes are done it applies them,
// commits what they made durable, and runs the tick that waited for them, if any. When a tick
// is due and the writes still run, it waits for them: the loop decides at most one tick's
// messages ahead of the sink, which bounds the rows and ledger entries waiting for writes.
func (p *processor[K]) poll(ctx context.Context) {
	if p.tickDue && p.job != nil {
		start := time.Now()
		p.await(ctx)
		p.waited = time.Since(start)
	} else if !p.collect() {
		return
	}
	if p.fatal != nil || ctx.Err() != nil {
		return
	}
	if p.tickDue {
		p.tickDue = false
		p.tick(ctx, CommitTick)
		return
	}
	p.retrySeeks()
	p.commit(ctx, CommitTick, p.tracker.AppendCommits(p.commitBuf[:0]))
}
