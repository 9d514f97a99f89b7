package consumer

import (
	"cmp"
	"context"
	"slices"
	"time"
	"unsafe"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/streamledger/streamledger/sink"
)

// The buffer bound (Config.BufferLimit). What the consumer holds is two kinds of memory, each
// with its own remedy:
//
//   - the write backlog: state rows not flushed, closed partials not written (waiting, in
//     flight, or kept after a failure) and dead letters waiting for their delivery report.
//     A tick writes it and drops it, so past a quarter of the budget the consumer ticks at
//     once; while writes are in flight it goes on deciding as long as that fits beside them,
//     and otherwise waits for them, deciding nothing (see holdsLoop). When the writes leave
//     it past a quarter (they failed, or the loop decided that much while they ran) or a
//     tick has nothing to write (dead letters waiting for their reports), it pauses every
//     partition (nothing new is fetched) until the backlog is back under resumeAt of that
//     quarter.
//   - the open windows: a partition's windows close only as its own watermark moves, so a
//     paused partition keeps them, and the running ones keep a working set of their own. Past
//     what the budget leaves beside the backlog, the partitions holding the most are paused
//     (stopping their growth) as long as the paused ones together hold at most the low-water
//     mark; a partition that alone holds more is never paused. They resume when the windows
//     fall to the low-water mark, or at the next tick at which they are back under the bound:
//     paused partitions cannot make the total fall, so waiting for the low-water mark alone
//     could hold them forever behind the others' working set; and they resume at a tick
//     before which the running ones decided nothing, whose windows then close only as their
//     watermarks advance while idle, if ever. Growth is so throttled to the bound, one tick
//     at a time. Open windows count three times against it (windowCharge): a close turns
//     them into partials waiting for their write, and the sink's working copy of those
//     (decoded, merged, encoded), while the windows still open go on growing. A tick's
//     close can take every window of every partition at once (the end of a bounded run
//     does), so the bound must hold that too.
//
// A write in flight counts twice in the backlog, for the same working copy: the sink works on
// a copy of what it writes (rows collapsed by key, columns, encoded statements) while the job
// still holds it.
//
// Polling goes on while partitions are paused, and a wait for writes ends within their
// deadline, so the group never evicts the consumer.

// buffered returns the bytes of the open windows and of the write backlog, as estimated by
// the workers after each chunk and by the loop for what waits for a write (a failed flush's
// rows included).
func (p *processor[K]) buffered() (windows, backlog int64) {
	for _, pt := range p.order {
		windows += pt.winBytes.Load()
		backlog += pt.stateBytes.Load() + pt.letterBytes.Load() + pt.unwrittenBytes
	}
	if p.job != nil {
		backlog += 2 * p.job.held
	}
	for _, n := range p.retryBytes {
		backlog += n
	}
	return windows, backlog
}

// checkBuffer applies the buffer bound to the write backlog; it runs on the loop after every
// poll.
func (p *processor[K]) checkBuffer(ctx context.Context) {
	if p.s.buffer <= 0 {
		return
	}
	_, backlog := p.buffered()
	quarter := p.s.buffer / 4
	switch {
	case backlog <= int64(float64(quarter)*p.s.resumeAt):
		for _, pt := range p.order {
			p.unpause(pt, pauseBacklog)
		}
	case backlog <= quarter:
	case p.job != nil:
		p.poll(ctx) // applies the writes in flight once done, waiting for them if holdsLoop says so
		if _, backlog = p.buffered(); p.job == nil && backlog > quarter {
			// What the writes could not drop (their rows, when they failed; dead letters
			// waiting for their reports), or what the loop decided while they ran, holds the
			// backlog past its share: nothing more is fetched until it is back under resumeAt
			// of it, so that it does not grow while it is written (by the tick the next call
			// runs when anything new was decided) or while the writes fail.
			p.pauseAll(pauseBacklog)
		}
	case !p.tickDue && p.dispatched != p.tickedCount:
		p.tick(ctx, CommitBuffer) // writes and drops the backlog
	default:
		// Nothing a tick could write (dead letters waiting for their reports, rows of failed
		// writes): fetch nothing more until the backlog falls.
		p.pauseAll(pauseBacklog)
	}
}

func (p *processor[K]) pauseAll(why uint8) {
	for _, pt := range p.order {
		p.pause(pt, why)
	}
}

// throttleWindows pauses the partitions holding the most open-window bytes while the windows
// pass what the budget leaves beside the backlog, and resumes them as they fall (see above).
// It runs at ticks.
func (p *processor[K]) throttleWindows() {
	if p.s.buffer <= 0 {
		return
	}
	windows, backlog := p.buffered()
	windows = windowCharge(windows)
	bound := max(p.s.buffer-backlog, p.s.buffer/2)
	low := int64(float64(bound) * p.s.resumeAt)
	stalled := p.dispatched == p.throttledCount
	p.throttledCount = p.dispatched
	if stalled || windows <= low || (windows <= bound && p.ticks > p.windowsPausedAt) {
		for _, pt := range p.order {
			p.unpause(pt, pauseWindows)
		}
	}
	if stalled || windows <= bound {
		return
	}
	loads := slices.Clone(p.order)
	slices.SortStableFunc(loads, func(a, b *part[K]) int { return cmp.Compare(b.winBytes.Load(), a.winBytes.Load()) })
	var held int64
	for _, pt := range loads {
		if pt.paused&pauseWindows != 0 {
			held += windowCharge(pt.winBytes.Load())
		}
	}
	for _, pt := range loads {
		n := windowCharge(pt.winBytes.Load())
		if pt.paused&pauseWindows != 0 || n == 0 || held+n > low {
			continue
		}
		p.pause(pt, pauseWindows)
		p.windowsPausedAt = p.ticks
		held += n
	}
}

// windowCharge is what open windows estimated at b bytes count against the bound: three
// times their size, two of them for their close (see the bound's description above).
func windowCharge(b int64) int64 { return 3 * b }

func (p *processor[K]) pause(pt *part[K], why uint8) {
	if pt.paused == 0 {
		if err := p.cl.Pause([]kafka.TopicPartition{pt.ktp}); err != nil {
			p.log.Warn("pause failed", "partition", pt.tp.String(), "error", err)
		}
		p.log.Info("partition paused", "partition", pt.tp.String(), "reason", pauseReason(why))
	}
	pt.paused |= why
}

func (p *processor[K]) unpause(pt *part[K], why uint8) {
	if pt.paused&why == 0 {
		return
	}
	pt.paused &^= why
	if pt.paused != 0 {
		return
	}
	if err := p.cl.Resume([]kafka.TopicPartition{pt.ktp}); err != nil {
		p.log.Warn("resume failed; retrying at the next tick", "partition", pt.tp.String(), "error", err)
		pt.paused |= why
		return
	}
	p.log.Info("partition resumed", "partition", pt.tp.String())
	p.seek(pt)
}

// seek fetches the messages dropped while the partition was paused again.
func (p *processor[K]) seek(pt *part[K]) {
	if pt.seekTo < 0 {
		return
	}
	tp := pt.ktp
	tp.Offset = kafka.Offset(pt.seekTo)
	if err := p.cl.Seek(tp, 0); err != nil {
		p.log.Warn("seek failed; the partition decides nothing until it succeeds", "partition", pt.tp.String(),
			"offset", pt.seekTo, "error", err)
		return
	}
	pt.seekTo = -1
}

func (p *processor[K]) retrySeeks() {
	for _, pt := range p.order {
		if pt.paused == 0 && pt.seekTo >= 0 {
			p.seek(pt)
		}
	}
}

func pauseReason(why uint8) string {
	switch why {
	case pauseWrite:
		return "write failed"
	case pauseBacklog:
		return "buffer bound: write backlog"
	case pauseWindows:
		return "buffer bound: open windows"
	}
	return "several"
}

// rowBytes estimates the memory a buffered state row holds: the row, its key and value
// slices, and each value boxed in an interface.
func rowBytes(r sink.StateRow) int64 {
	n := int64(unsafe.Sizeof(r))
	for _, vs := range [2][]any{r.Key, r.Values} {
		for _, v := range vs {
			n += 16 + valueBytes(v)
		}
	}
	return n
}

func valueBytes(v any) int64 {
	switch v := v.(type) {
	case string:
		return int64(16 + len(v))
	case []byte:
		return int64(24 + len(v))
	case time.Time:
		return 24
	case nil:
		return 0
	}
	return 8
}

// partialBytes estimates the memory of closed partials waiting for a write: each partial's
// serialized stats and the rest of it (key strings, attributes).
func partialBytes(ps []sink.Partial) int64 {
	var n int64
	for _, p := range ps {
		n += int64(unsafe.Sizeof(p)) + int64(len(p.Stats)+len(p.Dimension)+len(p.DimensionID)) + 64*int64(len(p.Attrs))
	}
	return n
}
