package consumer

import (
	"context"
	"fmt"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/internal/kafkarecord"
	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/window"
)

// decideChunk decides c's messages in offset order. It runs on the worker that holds c's
// partition. At the first message with an effect not yet applied it applies the batch that
// starts there, so that every effect is committed before its message is decided. ctx is
// cancelled only by Abort: nothing more is decided then.
func (p *processor[K]) decideChunk(ctx context.Context, c *chunk[K]) {
	c.fxRes = growTo(c.fxRes, len(c.msgs))
	c.fxApplied = 0
	for i, m := range c.msgs {
		if p.stop.any.Load() || ctx.Err() != nil {
			return
		}
		if err := c.errs[i]; err != nil {
			p.deadLetter(ctx, c.pt, m, c.arrivals[i], err)
			continue
		}
		if c.evs[i].Effect != nil && i >= c.fxApplied && !p.applyEffects(ctx, c, i) {
			return
		}
		p.decide(ctx, c.pt, m, c.arrivals[i], c.evs[i], c.fxRes[i])
	}
	c.pt.winBytes.Store(c.pt.win.Bytes())
}

// applyEffects hands ApplyEffects the batch of c's effects that starts at message first: the
// next effect messages that decoded, up to EffectBatch. It records what ApplyEffects said of
// each and reports whether the batch was applied; otherwise Run stops (the batch failed as a
// whole) or was aborted, and none of its messages is decided.
func (p *processor[K]) applyEffects(ctx context.Context, c *chunk[K], first int) bool {
	c.batch = c.batch[:0]
	last := first
	for i := first; i < len(c.msgs) && len(c.batch) < p.s.effectBatch; i++ {
		if c.errs[i] == nil && c.evs[i].Effect != nil {
			c.batch = append(c.batch, Effect{Message: c.msgs[i], Value: c.evs[i].Effect})
			last = i
		}
	}
	ectx, cancel := context.WithTimeout(ctx, p.s.WriteTimeout)
	res, err := p.s.ApplyEffects(ectx, c.batch)
	cancel()
	if err == nil && len(res) != len(c.batch) {
		err = fmt.Errorf("ApplyEffects returned %d results for a batch of %d effects", len(res), len(c.batch))
	}
	if err != nil {
		clear(c.batch)
		p.batchFailed(ctx, c, first, last, err)
		return false
	}
	k := 0
	for i := first; i <= last; i++ {
		if c.errs[i] == nil && c.evs[i].Effect != nil {
			c.fxRes[i] = res[k]
			k++
		}
	}
	clear(c.batch)
	c.fxApplied = last + 1
	return true
}

// batchFailed stops Run before the batch of c's messages first to last, which failed as a
// whole, unless Abort caused the failure. None of them is decided: not counted, not in the
// ledger, so never committed.
func (p *processor[K]) batchFailed(ctx context.Context, c *chunk[K], first, last int, err error) {
	if ctx.Err() != nil {
		return // aborted: the failure is the abort's
	}
	pt := c.pt
	from, to := int64(c.msgs[first].TopicPartition.Offset), int64(c.msgs[last].TopicPartition.Offset)
	p.stop.setHalt(fmt.Errorf("%w: %s offsets %d to %d: %w", ErrEffect, pt.tp, from, to, err))
	p.log.Error("a batch of effects failed; stopping after committing what is durable, this batch excluded",
		"partition", pt.tp.String(), "from", from, "to", to, "effects", len(c.batch), "error", err)
}

// decide decides one decoded message: late test against the partition watermark BEFORE the
// event is applied, apply (or take its effect's result, fx), add to the ledger, then move
// the watermark and tell the ledger. That order is what makes a replay from any committed
// offset decide as this run did.
func (p *processor[K]) decide(ctx context.Context, pt *part[K], m *kafka.Message, arrival time.Time, ev Event[K], fx sink.Result) {
	off := int64(m.TopicPartition.Offset)
	info := MessageInfo{TopicPartition: pt.tp, Offset: off, Decision: Admitted}
	if ev.Effect != nil {
		if !p.effect(ctx, pt, m, arrival, fx) {
			return
		}
		info.Effect = true
	}
	var cond ledger.Condition
	if len(ev.Values) > 0 {
		_, end := window.Bounds(ev.Time, pt.win.Size())
		info.WindowEnd = end
		if pt.wm.IsLate(end) {
			p.late(pt, m, off, arrival, ev, end, info)
			return
		}
		if !p.apply(pt, off, ev, end) {
			return
		}
		cond = ledger.Window(end)
	}
	if len(ev.State) > 0 {
		var size int64
		for _, r := range ev.State {
			size += pt.state.add(r)
		}
		pt.stateBytes.Add(size)
		cond = cond.And(ledger.Flush(p.seq))
		info.State = len(ev.State)
	}
	if !p.add(pt, off, cond) {
		return
	}
	if ev.Time.IsZero() {
		pt.wm.Touch(arrival)
	} else {
		pt.wm.Observe(ev.Time, arrival)
	}
	p.setWatermark(pt)
	if info.Effect {
		p.counters.effects.Add(1)
	}
	info.Condition = cond
	p.decided(pt, info)
}

// late records a late event: nothing applied, durable at once.
func (p *processor[K]) late(pt *part[K], m *kafka.Message, off int64, arrival time.Time, ev Event[K], end time.Time, info MessageInfo) {
	if !p.add(pt, off, ledger.Condition{}) {
		return
	}
	pt.wm.Observe(ev.Time, arrival)
	p.setWatermark(pt)
	info.Decision = Late
	p.decided(pt, info)
	if p.s.OnLate != nil {
		p.s.OnLate(m, ev, end)
	}
}

// apply adds an admitted event's values to its window.
func (p *processor[K]) apply(pt *part[K], off int64, ev Event[K], end time.Time) bool {
	for _, v := range ev.Values {
		if err := pt.win.AddKeys(ev.Time, v.Value, v.Keys...); err != nil {
			// Validate and IsLate rule out every error AddKeys returns.
			p.fail(err, "apply to windows", "partition", pt.tp.String(), "offset", off)
			return false
		}
	}
	pt.lastData = max(pt.lastData, end.UnixNano())
	pt.holds = max(pt.holds, pt.lastData)
	ow, ok := pt.open[end.UnixNano()]
	if !ok {
		ow.first = off
	}
	ow.entries++
	pt.open[end.UnixNano()] = ow
	pt.openEntries++
	return true
}

// effect takes the result of a message's effect, applied with its batch: it reports whether
// the message goes on to be admitted (the effect committed); otherwise the message was
// dead-lettered (a rejection or a conflict), or left undecided because Run stops.
func (p *processor[K]) effect(ctx context.Context, pt *part[K], m *kafka.Message, arrival time.Time, r sink.Result) bool {
	err := r.Err
	switch r.Outcome {
	case sink.Applied, sink.Duplicate:
		return true
	case sink.Rejected, sink.Conflict:
		if err == nil {
			err = fmt.Errorf("consumer: effect %s, with no reason given", r.Outcome)
		}
		p.deadLetter(ctx, pt, m, arrival, err)
		return false
	}
	if err == nil {
		err = fmt.Errorf("consumer: ApplyEffects returned the outcome %s, expected applied, duplicate, rejected or conflict", r.Outcome)
	}
	// Not decided: not counted, not in the ledger, so never committed.
	off := int64(m.TopicPartition.Offset)
	p.stop.setHalt(fmt.Errorf("%w: %s offset %d: %w", ErrEffect, pt.tp, off, err))
	p.log.Error("effect failed; stopping after committing what is durable, this message excluded",
		"partition", pt.tp.String(), "offset", off, "error", err)
	return false
}

// add records the entry in the partition's ledger.
func (p *processor[K]) add(pt *part[K], off int64, c ledger.Condition) bool {
	if err := pt.led.Add(off, c); err != nil {
		p.fail(err, "ledger add", "partition", pt.tp.String(), "offset", off)
		return false
	}
	if pt.firstAdded < 0 {
		pt.firstAdded = off
	}
	return true
}

// setWatermark tells the ledger the partition's watermark after the entries added so far.
func (p *processor[K]) setWatermark(pt *part[K]) {
	if wm, ok := pt.wm.Watermark(); ok {
		pt.led.SetWatermark(wm)
	}
}

// decided counts a message whose entry is in the ledger, by outcome, and reports it to the
// message hooks.
func (p *processor[K]) decided(pt *part[K], info MessageInfo) {
	pt.next = info.Offset + 1
	p.counters.consumed.Add(1)
	switch info.Decision {
	case Admitted:
		p.counters.admitted.Add(1)
	case Late:
		p.counters.late.Add(1)
	case DeadLettered:
		p.counters.dead.Add(1)
	}
	for _, h := range p.s.hooks.message {
		h.OnMessage(info)
	}
}

// deadLetter sends a message that failed to decode, validate or take its effect to the
// dead-letter topic. Its entry is durable only on a positive delivery report.
func (p *processor[K]) deadLetter(ctx context.Context, pt *part[K], m *kafka.Message, arrival time.Time, cause error) {
	off := int64(m.TopicPartition.Offset)
	if p.s.DeadLetters == nil {
		p.stop.setFatal(fmt.Errorf("%w: %s offset %d: %w", ErrUndecodable, pt.tp, off, cause))
		p.log.Error("message failed to decode and there is no dead-letter topic; stopping",
			"partition", pt.tp.String(), "offset", off, "error", cause)
		return
	}
	if !p.add(pt, off, ledger.Ack()) {
		return
	}
	pt.wm.Touch(arrival)
	p.decided(pt, MessageInfo{TopicPartition: pt.tp, Offset: off, Decision: DeadLettered, Condition: ledger.Ack(), Err: cause})
	class := dlq.ErrorClass(cause)
	if pt.deadSince == nil {
		pt.deadSince = make(map[string]int64)
	}
	pt.deadSince[class]++
	p.log.Debug("message dead-lettered", "partition", pt.tp.String(), "offset", off, "class", class, "error", cause)
	p.send(ctx, pt, &letter{tp: pt.tp, epoch: pt.epoch, offset: off, rec: kafkarecord.Of(m), cause: cause})
}
