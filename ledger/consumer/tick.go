package consumer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/window"
)

// tick is the periodic work, in the order the guarantee needs: flush state, then per
// partition the idle advance, close and write with progress, then commit what became durable.
// It starts at a barrier, so it sees every message dispatched before it decided. The writes
// run off the loop (see writeJob); the commit here carries what earlier writes, dead-letter
// reports and late messages made durable, and poll commits what this tick's writes make
// durable once they are done. A tick that comes while writes are in flight is due: a poll
// runs it once they are done, waiting for them first if holdsLoop says so.
func (p *processor[K]) tick(ctx context.Context, reason CommitReason) {
	if p.fatal() != nil || ctx.Err() != nil {
		return
	}
	start := time.Now()
	p.barrier()
	p.logDeadLetters(p.order)
	p.drainReports()
	p.resendDue(ctx)
	if p.job != nil {
		p.tickDue = true
		return
	}
	p.tickedAt, p.tickedCount = p.now(), p.dispatched
	p.endedSinceTick = false
	p.resolveInputEnd(ctx)
	if job := p.prepare(p.order, false); job != nil {
		p.launch(ctx, job, false)
		p.collect() // done already when the writes ran here
	}
	if p.fatal() != nil {
		return
	}
	p.retrySeeks()
	p.commit(ctx, reason, p.tracker.AppendCommits(p.commitBuf[:0]))
	p.ticks++
	p.throttleWindows()
	p.report(time.Since(start), reason == CommitCaughtUp)
	p.waited = 0
}

// caughtUp is called when a Poll returned nothing: the client has no message at hand. It
// seals the open chunks, so that their messages are decided now. With FlushWhenCaughtUp it
// also runs a tick early, so that the last messages of a burst are written and committed now
// rather than at the next FlushInterval. It never waits for writes in flight (their
// completion commits what they cover), and never ticks twice without a message dispatched
// in between, so a quiet consumer goes back to FlushInterval.
func (p *processor[K]) caughtUp(ctx context.Context) {
	p.sealAll()
	if p.endedSinceTick && p.job == nil && !p.tickDue {
		p.tick(ctx, CommitCaughtUp) // a bounded run: a partition reached its stop
		return
	}
	if p.s.FlushWhenCaughtUp <= 0 || p.job != nil || p.tickDue || p.dispatched == p.tickedCount {
		return
	}
	if p.now().Sub(p.tickedAt) < p.s.FlushWhenCaughtUp {
		return
	}
	p.tick(ctx, CommitCaughtUp)
}

// position reports the partition's consume position and high watermark to its watermark, for
// idleness, and computes its lag. The high watermark is the client's cached one (no broker
// call). A paused partition, or one with messages to fetch again, is never caught up.
func (p *processor[K]) position(pt *part[K]) {
	pt.lag, pt.caughtUp = -1, false
	_, hi, err := p.cl.GetWatermarkOffsets(pt.tp.Topic, pt.tp.Partition)
	if err != nil || hi < 0 {
		pt.wm.SetCaughtUp(false)
		return
	}
	pos := max(pt.next, pt.committed)
	if pt.paused == 0 && pt.seekTo < 0 {
		// librdkafka's position also moves past transaction markers and compacted gaps.
		if got, err := p.cl.Position([]kafka.TopicPartition{pt.ktp}); err == nil && len(got) == 1 && got[0].Offset >= 0 {
			pos = max(pos, int64(got[0].Offset))
		}
	}
	if pos < 0 && hi == 0 {
		pos = 0 // an empty partition
	}
	if pos < 0 {
		pt.wm.SetCaughtUp(false)
		return
	}
	pt.lag = max(hi-pos, 0)
	if pt.stop >= 0 && pos >= pt.stop {
		p.reachedStop(pt, true) // past transaction markers or compacted gaps up to the stop
	}
	if pt.paused != 0 || pt.seekTo >= 0 || pos > hi {
		pt.wm.SetCaughtUp(false)
		return
	}
	pt.caughtUp = pos == hi
	if p.s.IdleTimeout < 0 {
		pt.wm.SetCaughtUp(false) // partitions never go idle
		return
	}
	if err := pt.wm.SetPosition(pos, hi); err != nil {
		pt.wm.SetCaughtUp(false)
	}
}

// closeBatch runs one partition's share of a tick on the loop: the idle advance, then the
// windows the watermark closes, serialized. It returns the batch to write (the closed partials
// not yet written, kept from failed writes too, with the progress) when there is something
// new to write. A partition that is caught up without a watermark is reported empty once, so
// that it holds back no merged row (see sink.CloseBatch.Empty).
func (p *processor[K]) closeBatch(pt *part[K]) (sink.CloseBatch, bool) {
	p.position(pt)
	if p.s.Sink == nil {
		return sink.CloseBatch{}, false // no windows, no progress to write
	}
	p.endOfInput(pt)
	pt.wm.Tick()
	wm, ok := pt.wm.Watermark()
	if !ok {
		if (pt.caughtUp || pt.finished) && !pt.emptySent {
			return sink.CloseBatch{Source: pt.tp, Empty: true}, true
		}
		return sink.CloseBatch{}, false
	}
	if closed := pt.win.Close(wm); len(closed) > 0 {
		sp, err := p.toSink(closed)
		if errors.Is(err, ErrConfig) {
			p.stop.setFatal(err)
			p.log.Error("stopping: the sink refuses what Series returns", "partition", pt.tp.String(), "error", err)
			return sink.CloseBatch{}, false
		}
		if err != nil {
			p.fail(err, "serialize closed windows", "partition", pt.tp.String())
			return sink.CloseBatch{}, false
		}
		if len(pt.unwritten) == 0 {
			pt.unwritten = sp // not copied: a large close would be moved once more, on the loop
		} else {
			pt.unwritten = append(pt.unwritten, sp...)
		}
		pt.unwrittenBytes += partialBytes(sp)
		pt.winBytes.Store(pt.win.Bytes())
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

// toSink converts closed partials for the sink. Window keys that map to the same sink key in
// one window are merged, in their (deterministic) close order.
func (p *processor[K]) toSink(closed []window.Partial[K]) ([]sink.Partial, error) {
	out := make([]sink.Partial, 0, len(closed))
	stats := make([]*window.Stats, 0, len(closed))
	index := newSeriesIndex(len(closed))
	for _, c := range closed {
		sk := p.s.Series(c.Key)
		if err := p.checkAttrs(c.Key, sk); err != nil {
			return nil, err
		}
		k := sink.Key{WindowStart: c.Start, Dimension: sk.Dimension, DimensionID: sk.DimensionID}
		if i, dup := index.find(out, k); dup {
			merged, err := window.Merge(stats[i], c.Stats)
			if err != nil {
				return nil, err
			}
			stats[i] = merged
			out[i].Attrs = addAttrs(out[i].Attrs, sk.Attrs)
			continue
		}
		stats = append(stats, c.Stats)
		out = append(out, sink.Partial{Key: k, WindowEnd: c.End, Attrs: sk.Attrs})
	}
	var blocks statsBlocks
	for i := range out {
		b, err := blocks.append(stats[i])
		if err != nil {
			return nil, err
		}
		out[i].Stats = b
	}
	return out, nil
}

// seriesIndex finds the partial of a sink key among the partials of one close by a hash of
// the key, so that it holds 12 bytes per partial rather than a copy of every key: the
// position of the first partial of each hash, and of any other key whose hash a different
// key took first.
type seriesIndex struct {
	hash  func(seriesKey) uint64
	first map[uint64]int32
	other map[seriesKey]int32 // keys whose hash another key holds in first; rarely any
}

type seriesKey struct {
	start   int64
	dim, id string
}

func keyOf(k sink.Key) seriesKey {
	return seriesKey{k.WindowStart.UnixNano(), k.Dimension, k.DimensionID}
}

func newSeriesIndex(n int) *seriesIndex {
	seed := maphash.MakeSeed()
	return &seriesIndex{
		hash:  func(k seriesKey) uint64 { return maphash.Comparable(seed, k) },
		first: make(map[uint64]int32, n),
	}
}

// find returns the position of k's partial in out, or registers len(out) as its position.
func (x *seriesIndex) find(out []sink.Partial, k sink.Key) (int, bool) {
	sk := keyOf(k)
	h := x.hash(sk)
	i, ok := x.first[h]
	if !ok {
		x.first[h] = int32(len(out))
		return 0, false
	}
	if keyOf(out[i].Key) == sk {
		return int(i), true
	}
	if i, ok := x.other[sk]; ok {
		return int(i), true
	}
	if x.other == nil {
		x.other = make(map[seriesKey]int32)
	}
	x.other[sk] = int32(len(out))
	return 0, false
}

// statsBlockSize is the size of the blocks that hold a close's serialized stats.
const statsBlockSize = 64 << 10

// statsBlocks serializes the stats of one close into shared blocks rather than one
// allocation each: a close's partials are written, kept and dropped together, so one block
// lives as long as each of its stats would, and the collector tracks a block per few
// thousand partials instead of one object per partial.
type statsBlocks struct{ free []byte }

// append returns s serialized, with its capacity capped at its length so that no append to
// it reaches the next stats in the block.
func (b *statsBlocks) append(s *window.Stats) ([]byte, error) {
	if cap(b.free) < statsBlockSize/16 {
		b.free = make([]byte, 0, statsBlockSize)
	}
	out, err := s.AppendBinary(b.free)
	if err != nil {
		return nil, err
	}
	if len(out) <= cap(b.free) { // in the block: append did not move it
		b.free = b.free[len(out):len(out)]
	}
	return out[:len(out):len(out)], nil
}

// addAttrs returns into with the attributes of from that it lacks. The maps come from
// Config.Series, which may share one map between series, so into is copied before it
// changes, never written in place.
func addAttrs(into, from map[string]string) map[string]string {
	var out map[string]string
	for name, v := range from {
		if _, ok := into[name]; ok {
			continue
		}
		if out == nil {
			out = maps.Clone(into)
			if out == nil {
				out = make(map[string]string, len(from))
			}
		}
		out[name] = v
	}
	if out == nil {
		return into
	}
	return out
}

// commit sends the commits synchronously, with their metadata, and marks the accepted ones.
// A failed commit is logged and left for the next tick: Tracker.Commits reports it again.
func (p *processor[K]) commit(ctx context.Context, reason CommitReason, cs []ledger.Commit) []ledger.Commit {
	if len(cs) == 0 || p.fatal() != nil || ctx.Err() != nil || p.commitBusy() {
		return nil
	}
	offsets := make([]kafka.TopicPartition, len(cs))
	for i, c := range cs {
		topic := c.Topic
		offsets[i] = kafka.TopicPartition{Topic: &topic, Partition: c.Partition, Offset: kafka.Offset(c.Offset)}
		if c.Metadata != "" {
			md := c.Metadata
			offsets[i].Metadata = &md
		}
	}
	start := time.Now()
	res, err := p.commitBounded(ctx, reason, offsets)
	info := CommitInfo{Reason: reason, Commits: cs, Err: err}
	var ok []ledger.Commit
	if err != nil {
		info.Failed = cs
	} else {
		failed := map[ledger.TopicPartition]error{}
		for _, r := range res {
			if r.Error != nil && r.Topic != nil {
				failed[ledger.TopicPartition{Topic: *r.Topic, Partition: r.Partition}] = r.Error
			}
		}
		for _, c := range cs {
			if e, bad := failed[c.TopicPartition]; bad {
				info.Failed = append(info.Failed, c)
				info.Err = cmp.Or(info.Err, e)
				continue
			}
			ok = append(ok, c)
		}
	}
	info.Duration = time.Since(start)
	p.tracker.MarkCommitted(ok...)
	p.committed(ctx, reason, info, len(cs))
	return ok
}

// committed counts and logs a commit attempt, and calls the commit hooks.
func (p *processor[K]) committed(ctx context.Context, reason CommitReason, info CommitInfo, n int) {
	if info.Err != nil {
		p.counters.commitFail.Add(1)
		level := slog.LevelWarn
		if expectedCommitError(info.Err) || reason == CommitRevoke {
			level = slog.LevelInfo
		}
		p.log.Log(ctx, level, "commit failed; retrying at the next tick", "reason", reason.String(),
			"partitions", len(info.Failed), "error", info.Err)
	} else {
		p.counters.commits.Add(1)
		p.log.Debug("committed", "reason", reason.String(), "partitions", n)
	}
	for _, h := range p.s.hooks.commit {
		h.OnCommit(info)
	}
}

// expectedCommitError reports the errors a commit meets around a rebalance: the group moved
// on, and the next owner commits from what is durable.
func expectedCommitError(err error) bool {
	var ke kafka.Error
	if !errors.As(err, &ke) {
		return false
	}
	switch ke.Code() {
	case kafka.ErrState, kafka.ErrRebalanceInProgress, kafka.ErrNoOffset, kafka.ErrIllegalGeneration,
		kafka.ErrUnknownMemberID, kafka.ErrAssignmentLost, kafka.ErrStaleMemberEpoch, kafka.ErrFencedInstanceID:
		return true
	}
	return false
}

// report calls the gauge hooks.
func (p *processor[K]) report(d time.Duration, caughtUp bool) {
	if len(p.s.hooks.partition) == 0 && len(p.s.hooks.tick) == 0 {
		return
	}
	h := p.live.health(time.Now(), p.s.AssignmentWait, p.s.WriteTimeout)
	ti := TickInfo{Partitions: len(p.order), Duration: d, CaughtUp: caughtUp, Waited: p.waited,
		Unassigned: h.Unassigned, SinceAssignment: h.SinceAssignment}
	for _, pt := range p.order {
		wm, _ := pt.wm.Watermark()
		pi := PartitionInfo{
			TopicPartition: pt.tp, Watermark: wm, Lag: pt.lag, Pending: pt.led.Pending(),
			OpenWindows: pt.win.OpenWindows(), OpenKeys: pt.win.OpenKeys(),
			Idle: pt.wm.Idle(), Paused: pt.paused != 0,
		}
		if pt.hasWritten {
			pi.ClosedThrough = pt.written
		}
		ti.Pending += pi.Pending
		ti.OpenKeys += pi.OpenKeys
		for _, h := range p.s.hooks.partition {
			h.OnPartition(pi)
		}
	}
	ti.MinWatermark, _ = p.marks.Min()
	ti.WindowBytes, ti.BacklogBytes = p.buffered()
	for _, h := range p.s.hooks.tick {
		h.OnTick(ti)
	}
}

// checkAttrs checks a sink key's attributes against the sink's aggregate spec, when it tells.
func (p *processor[K]) checkAttrs(k K, sk sink.Series) error {
	if p.s.agg == nil {
		return nil
	}
	for name := range sk.Attrs {
		if !slices.Contains(p.s.agg.Attributes, name) {
			return fmt.Errorf("%w: Series: the series of %v carries attribute %q; the sink's aggregate spec declares %q",
				ErrConfig, k, name, p.s.agg.Attributes)
		}
	}
	return nil
}

// commitBounded sends offsets with CommitOffsets, waiting at most commitTimeout and until ctx
// ends: librdkafka's commit waits for the group coordinator without a bound. Any commit but
// the shutdown's own also stops waiting once a stop is requested, so that a shutdown never
// starts commitTimeout late. A commit left behind is reported failed (nothing is marked
// committed, which is always safe) and keeps running; until it returns no other commit is
// sent, so that it cannot land after a later one and move the committed offset back.
func (p *processor[K]) commitBounded(ctx context.Context, reason CommitReason, offsets []kafka.TopicPartition) ([]kafka.TopicPartition, error) {
	var (
		res  []kafka.TopicPartition
		err  error
		done = make(chan struct{})
	)
	go func() { // res and err are read only once done is closed
		defer close(done)
		res, err = p.cl.CommitOffsets(offsets)
	}()
	t := time.NewTimer(p.s.commitTimeout)
	defer t.Stop()
	var stop <-chan struct{} // nil: never ready
	if reason != CommitShutdown {
		stop = p.stopRequested
	}
	var cut error
	select {
	case <-done:
		return res, err
	case <-t.C:
		cut = fmt.Errorf("%w after %v", ErrCommitTimeout, p.s.commitTimeout)
	case <-ctx.Done():
		cut = fmt.Errorf("%w: %w", ErrCommitTimeout, context.Cause(ctx))
	case <-stop:
		cut = fmt.Errorf("%w: the consumer is stopping", ErrCommitTimeout)
	}
	p.commitDone = done
	return nil, cut
}

// waitCommit waits until a commit left behind by commitBounded returns, or ctx ends, so that
// the shutdown's own commit is not skipped for it.
func (p *processor[K]) waitCommit(ctx context.Context) {
	if p.commitDone == nil {
		return
	}
	select {
	case <-p.commitDone:
	case <-ctx.Done():
	}
}

// commitBusy reports whether a commit left behind by commitBounded is still running.
func (p *processor[K]) commitBusy() bool {
	if p.commitDone == nil {
		return false
	}
	select {
	case <-p.commitDone:
		p.commitDone = nil
		return false
	default:
		p.log.Debug("a commit left behind still runs; committing at a later tick")
		return true
	}
}
