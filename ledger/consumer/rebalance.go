package consumer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/watermark"
	"github.com/streamledger/streamledger/window"
)

// assignment is one newly assigned partition with its committed offset and metadata.
type assignment struct {
	tp        ledger.TopicPartition
	committed int64 // -1 if none
	metadata  string
	start     int64 // where the client starts (see startOffsets)
	stop      int64 // a bounded run's stop offset, -1 if none
	logStart  int64 // the partition's log start when it was assigned, -1 if not read
}

// assign restores the partitions: watermark = max(metadata's, closed_through), windows closed
// through it (so that replayed events of written windows are late), a ledger at the committed
// offset that knows closed_through and the watermark. Before that it registers with the sink
// every partition of the assigned topics not registered yet (all, when the client told how
// many the topics have), so that no merged row is written before every partition that may
// feed it has closed past it.
func (p *processor[K]) assign(ctx context.Context, as []assignment, topicParts []ledger.TopicPartition) error {
	var tps []ledger.TopicPartition
	for _, a := range as {
		if p.parts[a.tp] == nil {
			tps = append(tps, a.tp)
		}
	}
	if len(tps) == 0 {
		return nil
	}
	// The sink is never called from two goroutines at once, and a job in flight never
	// writes partitions whose set changed under it.
	p.await(ctx)
	var progress map[ledger.TopicPartition]time.Time
	if p.s.Sink != nil {
		p.register(ctx, append(slices.Clone(topicParts), tps...))
		var err error
		if progress, err = p.s.Sink.ClosedThrough(ctx, tps...); err != nil {
			return fmt.Errorf("%w: reading closed_through of %v: %w", ErrAssign, tps, err)
		}
	}
	for _, a := range as {
		if p.parts[a.tp] != nil {
			p.log.Warn("partition assigned twice; keeping its state", "partition", a.tp.String())
			continue
		}
		if err := p.restore(a, progress); err != nil {
			return err
		}
	}
	p.reorder()
	p.endKnown = false // the new partitions take part in the input's end
	return nil
}

// register writes a registration batch for every partition of tps the sink has not been
// told of by this consumer. When that fails, the partitions are registered by the next
// tick's close write, in the same call as anything it closes.
func (p *processor[K]) register(ctx context.Context, tps []ledger.TopicPartition) {
	for _, tp := range tps {
		if !p.registered[tp] && !slices.Contains(p.toRegister, tp) {
			p.toRegister = append(p.toRegister, tp)
		}
	}
	if len(p.toRegister) == 0 {
		return
	}
	slices.SortFunc(p.toRegister, compareTP)
	regs := p.registrations(nil)
	if err := p.s.Sink.WriteClose(ctx, regs...); err != nil {
		p.log.Warn("registering partitions with the sink failed; retrying with the next close write",
			"partitions", len(regs), "error", err)
		return
	}
	p.registeredAll(regs)
}

// registrations returns a registration batch for each partition to register that has no
// batch in batch (any batch registers its source).
func (p *processor[K]) registrations(batch []sink.CloseBatch) []sink.CloseBatch {
	var out []sink.CloseBatch
	for _, tp := range p.toRegister {
		if !slices.ContainsFunc(batch, func(b sink.CloseBatch) bool { return b.Source == tp }) {
			out = append(out, sink.CloseBatch{Source: tp})
		}
	}
	return out
}

// registeredAll records that the sink took batches, which register their sources.
func (p *processor[K]) registeredAll(batches []sink.CloseBatch) {
	for _, b := range batches {
		p.registered[b.Source] = true
	}
	p.toRegister = slices.DeleteFunc(p.toRegister, func(tp ledger.TopicPartition) bool { return p.registered[tp] })
}

// restore makes the state of one newly assigned partition.
func (p *processor[K]) restore(a assignment, progress map[ledger.TopicPartition]time.Time) error {
	h := p.s.Topics[a.tp.Topic]
	if h == nil {
		return fmt.Errorf("%w: partition %v of a topic without a handler", ErrAssign, a.tp)
	}
	info := AssignInfo{TopicPartition: a.tp, Committed: a.committed, Metadata: a.metadata}
	var rp watermark.RestorePoint
	if cp, err := ledger.DecodeMetadata(a.metadata); err == nil {
		rp.Metadata, info.MetadataWatermark = cp.Watermark, cp.Watermark
	} else {
		info.MetadataErr = err
		if !errors.Is(err, ledger.ErrNoMetadata) {
			p.log.Warn("commit metadata unreadable; restoring the watermark from closed_through alone",
				"partition", a.tp.String(), "committed", a.committed, "error", err)
		}
	}
	ct, hasCT := progress[a.tp]
	if hasCT {
		rp.ClosedThrough, info.ClosedThrough = ct.UTC(), ct.UTC()
	}
	wm, err := p.marks.Assign(a.tp, rp)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrAssign, err)
	}
	win, err := window.New[K](p.s.win)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrAssign, err)
	}
	led, err := p.tracker.Assign(a.tp, a.committed)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrAssign, err)
	}
	if hasCT {
		if err := led.CloseThrough(ct); err != nil {
			return fmt.Errorf("%w: %w", ErrAssign, err)
		}
	}
	if w, ok := wm.Watermark(); ok {
		win.Close(w) // empty: only records how far it is closed
		led.SetWatermark(w)
		info.Watermark = w
	}
	if !p.s.Until.bounded() {
		a.stop = -1
	}
	topic := a.tp.Topic
	p.epoch++
	p.parts[a.tp] = &part[K]{
		tp: a.tp, ktp: kafka.TopicPartition{Topic: &topic, Partition: a.tp.Partition},
		handler: h, epoch: p.epoch,
		led: led, wm: wm, win: win,
		written: ct, hasWritten: hasCT,
		committed: a.committed, start: a.start, next: -1, nextDispatch: -1, seekTo: -1, lag: -1, firstAdded: -1,
		open: map[int64]openWindow{}, stop: a.stop,
	}
	if hasCT {
		p.parts[a.tp].holds = ct.UnixNano()
	}
	p.held[a.tp] = true
	if pt := p.parts[a.tp]; pt.stop >= 0 && max(a.committed, a.start) >= pt.stop {
		p.reachedStop(pt, false) // nothing left below the stop; paused once the client holds it
	}
	p.log.Info("partition assigned", "partition", a.tp.String(), "committed", a.committed, "start", a.start,
		"watermark", logTime(info.Watermark), "closed_through", logTime(info.ClosedThrough),
		"metadata_watermark", logTime(info.MetadataWatermark))
	for _, h := range p.s.hooks.assign {
		h.OnAssign(info)
	}
	return nil
}

func compareTP(a, b ledger.TopicPartition) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

func (p *processor[K]) reorder() {
	p.order = p.order[:0]
	for _, pt := range p.parts {
		p.order = append(p.order, pt)
	}
	slices.SortFunc(p.order, func(a, b *part[K]) int { return compareTP(a.tp, b.tp) })
}

// revoke gives partitions up. Revoked: state flushed, pending closes written, the durable
// prefix committed, then everything dropped. Lost: dropped without writing or committing, as
// another consumer may own them already.
func (p *processor[K]) revoke(ctx context.Context, tps []ledger.TopicPartition, lost bool, reason CommitReason) {
	var owned []*part[K]
	for _, tp := range tps {
		if pt := p.parts[tp]; pt != nil {
			owned = append(owned, pt)
		}
	}
	if len(owned) == 0 {
		return
	}
	slices.SortFunc(owned, func(a, b *part[K]) int { return compareTP(a.tp, b.tp) })
	if p.endKnown {
		p.endKnown, p.endedSinceTick = false, true // resolved again, without these
	}
	p.barrier()
	p.logDeadLetters(owned)
	if p.fatal() == nil {
		p.await(ctx)
	}
	if !lost && p.fatal() == nil {
		p.drainReports()
		if job := p.prepare(owned, true); job != nil {
			p.launch(ctx, job, true)
			p.collect()
		}
	}
	final, dropped := p.release(owned, lost)
	if !lost {
		p.commit(ctx, reason, final)
	}
	for i, pt := range owned {
		delete(p.parts, pt.tp)
		p.marks.Revoke(pt.tp)
		if p.last == pt {
			p.last = nil
		}
		p.log.Info("partition given up", "partition", pt.tp.String(), "lost", lost, "uncommitted", dropped[i])
		for _, h := range p.s.hooks.revoke {
			h.OnRevoke(RevokeInfo{TopicPartition: pt.tp, Lost: lost, Dropped: dropped[i]})
		}
	}
	p.reorder()
}

// release takes the ledgers of owned out of the tracker: the final commit of each (unless
// lost) and how many uncommitted entries each drops.
func (p *processor[K]) release(owned []*part[K], lost bool) ([]ledger.Commit, []int64) {
	var final []ledger.Commit
	dropped := make([]int64, len(owned))
	for i, pt := range owned {
		dropped[i] = pt.led.Pending()
		if lost {
			p.tracker.Drop(pt.tp)
			continue
		}
		c, ok, err := p.tracker.Revoke(pt.tp)
		if err != nil {
			p.fail(err, "ledger revoke", "partition", pt.tp.String())
			continue
		}
		if ok {
			final = append(final, c)
		}
	}
	return final, dropped
}

// assignedTPs returns the owned partitions, sorted.
func (p *processor[K]) assignedTPs() []ledger.TopicPartition {
	out := make([]ledger.TopicPartition, len(p.order))
	for i, pt := range p.order {
		out[i] = pt.tp
	}
	return out
}

// owned returns the owned partitions for the client, sorted.
func (p *processor[K]) owned() []kafka.TopicPartition {
	out := make([]kafka.TopicPartition, len(p.order))
	for i, pt := range p.order {
		out[i] = pt.ktp
	}
	return out
}

// logTime is t for a log record, or "none" for the zero time (an unknown watermark).
func logTime(t time.Time) slog.Value {
	if t.IsZero() {
		return slog.StringValue("none")
	}
	return slog.TimeValue(t)
}
