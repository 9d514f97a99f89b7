package consumer

import (
	"cmp"
	"slices"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// backpressureEvery is how many dispatched messages pass between two checks of the bounds
// outside ticks. A check waits for every dispatched message to be decided (a barrier), so
// it is spaced wider than one chunk per worker.
const backpressureEvery = 8192

// checkBounds runs the backpressure check at a barrier once backpressureEvery messages were
// dispatched since the last check, when a bound is configured.
func (p *processor[K]) checkBounds() {
	if p.sinceCheck < backpressureEvery || (p.s.MaxPending == 0 && p.s.MaxOpenKeys == 0) {
		return
	}
	p.barrier()
	p.backpressure(false)
}

// backpressure pauses partitions while the ledger or the open windows hold more than their
// bounds, and resumes them as they drain. Polling goes on meanwhile, so the group never evicts
// the consumer. It runs at a barrier.
//
// Ledger (MaxPending): only entries that can become committable without new data are worth
// pausing for ("drainable"): those before the partition's first entry of a window still open
// (closed windows waiting for a write, unflushed state, unconfirmed dead letters). From that
// entry on they wait for the partition's own later messages, so pausing their partition would
// hold them forever. Past the
// bound, the partitions holding the most drainable entries are paused until the running ones
// hold at most the low-water mark; a paused partition resumes once the total is under the
// low-water mark or once it has drained everything it could.
//
// Open windows (MaxOpenKeys): a partition's windows close only as its own watermark moves,
// so a paused partition keeps its open keys, and the running ones keep a working set of their
// own. Past the bound, the partitions holding the most are paused (stopping their growth) as
// long as the paused ones together hold at most the low-water mark; a partition that alone
// holds more is never paused. They resume when the total falls to the low-water mark, or at the
// next tick at which it is back under the bound: paused partitions cannot make the total fall,
// so waiting for the low-water mark alone could hold them forever behind the others' working
// set. Growth is so throttled to the bound, one tick at a time.
func (p *processor[K]) backpressure(atTick bool) {
	p.sinceCheck = 0
	if p.s.MaxPending == 0 && p.s.MaxOpenKeys == 0 {
		return
	}
	type load struct {
		pt        *part[K]
		pending   int64
		drainable int64
		keys      int
	}
	var (
		pending int64
		keys    int
		loads   = make([]load, 0, len(p.order))
	)
	for _, pt := range p.order {
		n := pt.led.Pending()
		k := pt.win.OpenKeys()
		pending += n
		keys += k
		loads = append(loads, load{pt: pt, pending: n, drainable: pt.drainable(), keys: k})
	}

	if p.s.MaxPending > 0 {
		low := int64(float64(p.s.MaxPending) * p.s.ResumeAt)
		for _, l := range loads {
			if pending <= low || l.drainable == 0 {
				p.unpause(l.pt, pausePending)
			}
		}
		if pending > p.s.MaxPending {
			slices.SortStableFunc(loads, func(a, b load) int { return cmp.Compare(b.drainable, a.drainable) })
			var running int64
			for _, l := range loads {
				if l.pt.paused&pausePending == 0 {
					running += l.pending
				}
			}
			paused := false
			for _, l := range loads {
				if running <= low || l.drainable == 0 {
					break
				}
				if l.pt.paused&pausePending != 0 {
					continue
				}
				p.pause(l.pt, pausePending)
				running -= l.pending
				paused = true
			}
			if !paused && !p.overWarned {
				p.overWarned = true
				p.log.Warn("uncommitted messages over MaxPending, held by open windows that only new data can close; "+
					"MaxPending should exceed the working set", "pending", pending, "max_pending", p.s.MaxPending)
			}
		} else {
			p.overWarned = false
		}
	}

	if p.s.MaxOpenKeys > 0 {
		low := int(float64(p.s.MaxOpenKeys) * p.s.ResumeAt)
		if keys <= low || (atTick && keys <= p.s.MaxOpenKeys && p.ticks > p.keysPausedAt) {
			for _, l := range loads {
				p.unpause(l.pt, pauseKeys)
			}
		}
		if keys > p.s.MaxOpenKeys {
			slices.SortStableFunc(loads, func(a, b load) int { return cmp.Compare(b.keys, a.keys) })
			held := 0
			for _, l := range loads {
				if l.pt.paused&pauseKeys != 0 {
					held += l.keys
				}
			}
			for _, l := range loads {
				if l.pt.paused&pauseKeys != 0 || l.keys == 0 || held+l.keys > low {
					continue
				}
				p.pause(l.pt, pauseKeys)
				p.keysPausedAt = p.ticks
				held += l.keys
			}
		}
	}
}

// drainable estimates how many of the partition's uncommitted entries can become committable
// without new data: those before the first entry of a window that is still open (closed
// windows get written, flushes and acks arrive); the ones after it wait for the partition's
// later messages whatever their own condition.
func (pt *part[K]) drainable() int64 {
	pending := pt.led.Pending()
	if len(pt.open) == 0 || pending == 0 {
		return pending
	}
	firstOpen := int64(-1)
	for _, ow := range pt.open {
		if firstOpen < 0 || ow.first < firstOpen {
			firstOpen = ow.first
		}
	}
	base, ok := pt.led.Committable()
	if !ok {
		base = pt.firstAdded
	}
	return min(max(firstOpen-base, 0), pending)
}

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
	case pausePending:
		return "backpressure: uncommitted messages"
	case pauseKeys:
		return "backpressure: open windows"
	}
	return "several"
}
