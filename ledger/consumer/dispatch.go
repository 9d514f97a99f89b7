package consumer

import (
	"context"
	"sync"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/sink"
)

// Chunking: the loop hands a partition's messages to the workers in chunks of consecutive
// offsets. A chunk is sealed when it is full (chunkSize messages, or more to hold a batch of
// Config.EffectBatch effects), when a Poll finds nothing, when sealEvery messages (or a chunk's
// worth, if more) were dispatched since the last general sealing (so that a slow partition's
// messages do not wait behind a busy one's), and at every barrier.
const (
	chunkSize = 256
	sealEvery = 2048
)

// chunk is a run of consecutive messages of one partition: decoded by any worker, decided
// by one, in offset order with the partition's other chunks.
type chunk[K comparable] struct {
	pt       *part[K]
	msgs     []*kafka.Message
	arrivals []time.Time // Clock when each message was dispatched
	evs      []Event[K]
	errs     []error
	ready    bool // decoded; guarded by pt.mu

	// Effects, while the chunk is decided: the batch handed to ApplyEffects, what it said of
	// each message's effect, and how far the applied batches reach.
	batch     []Effect
	fxRes     []sink.Result
	fxApplied int // messages before this index had their effects applied
}

// workers decode and decide chunks. Decoding is a pure function of the message, so any
// worker decodes any chunk, several of one partition at once; deciding follows offset order
// within a partition, so a partition's chunks are decided one after another, by whichever
// worker finds the next one decoded (finish). Chunks of different partitions are decided
// in parallel.
type workers[K comparable] struct {
	p       *processor[K]
	ctx     context.Context
	inline  bool // Workers < 0: the loop decodes and decides each message as it dispatches it
	todo    chan *chunk[K]
	pending sync.WaitGroup // chunks dispatched and not yet decided
	done    sync.WaitGroup // running workers
	free    sync.Pool
}

// startWorkers starts the configured number of workers; ctx is the context of effects and
// dead-letter sends (cancelled by Abort).
func (p *processor[K]) startWorkers(ctx context.Context) {
	w := &workers[K]{p: p, ctx: ctx, inline: p.s.workers == 0}
	w.free.New = func() any { return &chunk[K]{} }
	p.pool = w
	if w.inline {
		return
	}
	w.todo = make(chan *chunk[K], 2*p.s.workers)
	for range p.s.workers {
		w.done.Go(func() {
			for c := range w.todo {
				c.decode(p)
				w.finish(c)
			}
		})
	}
}

// stopWorkers waits for every dispatched chunk and ends the workers.
func (p *processor[K]) stopWorkers() {
	if p.pool == nil {
		return
	}
	p.barrier()
	if !p.pool.inline {
		close(p.pool.todo)
		p.pool.done.Wait()
	}
	p.pool = nil
}

// dispatch hands one message to its partition's chunk. It drops what must not be decided:
// a message of a partition not owned (its next owner decides it), one fetched again after a
// seek, and one of a paused partition (fetched again from the first such offset on resume).
func (p *processor[K]) dispatch(m *kafka.Message) {
	if p.stop.any.Load() || m.TopicPartition.Topic == nil {
		return
	}
	pt := p.last
	if pt == nil || pt.tp.Partition != m.TopicPartition.Partition || pt.tp.Topic != *m.TopicPartition.Topic {
		tp := ledger.TopicPartition{Topic: *m.TopicPartition.Topic, Partition: m.TopicPartition.Partition}
		if pt = p.parts[tp]; pt == nil {
			p.log.Debug("message of a partition not owned; dropped", "partition", tp.String(), "offset", int64(m.TopicPartition.Offset))
			return
		}
		p.last = pt
	}
	off := int64(m.TopicPartition.Offset)
	if off < pt.nextDispatch {
		return // fetched again after a seek: dispatched already
	}
	if pt.stop >= 0 && off >= pt.stop {
		p.reachedStop(pt, true) // a bounded run: nothing at or past the stop is decided
		return
	}
	if pt.paused != 0 || pt.seekTo >= 0 {
		p.dropPaused(pt, off)
		return
	}
	c := pt.cur
	if c == nil {
		c = p.pool.free.Get().(*chunk[K])
		c.pt = pt
		pt.cur = c
		p.open = append(p.open, pt)
	}
	c.msgs = append(c.msgs, m)
	c.arrivals = append(c.arrivals, p.s.Clock())
	pt.nextDispatch = off + 1
	if pt.stop >= 0 && pt.nextDispatch >= pt.stop {
		p.reachedStop(pt, true)
	}
	p.dispatched++
	if len(c.msgs) >= p.s.chunk || p.pool.inline {
		p.seal(pt)
	}
	if p.sinceSeal++; p.sinceSeal >= p.s.sealEvery {
		p.sealAll()
	}
}

// dropPaused drops a message of a paused partition: librdkafka drops fetched messages at
// Pause, and any that still arrive are fetched again, from the first offset not decided.
func (p *processor[K]) dropPaused(pt *part[K], off int64) {
	if pt.seekTo >= 0 {
		return
	}
	pt.seekTo = off
	if pt.nextDispatch >= 0 {
		pt.seekTo = min(off, pt.nextDispatch)
	} else if pt.committed >= 0 {
		pt.seekTo = min(off, pt.committed)
	}
	p.log.Debug("message of a paused partition dropped; it is fetched again on resume",
		"partition", pt.tp.String(), "offset", off, "from", pt.seekTo)
}

// seal hands pt's open chunk to the workers.
func (p *processor[K]) seal(pt *part[K]) {
	c := pt.cur
	if c == nil {
		return
	}
	pt.cur = nil
	w := p.pool
	w.pending.Add(1)
	pt.mu.Lock()
	pt.queue = append(pt.queue, c)
	pt.mu.Unlock()
	if w.inline {
		c.decode(p)
		w.finish(c)
		return
	}
	w.todo <- c
}

// sealAll seals every open chunk.
func (p *processor[K]) sealAll() {
	for _, pt := range p.open {
		p.seal(pt)
	}
	clear(p.open)
	p.open = p.open[:0]
	p.sinceSeal = 0
}

// barrier returns once every dispatched message has been decided: from then until the next
// dispatch, the loop owns every partition's decision state.
func (p *processor[K]) barrier() {
	if p.pool == nil {
		return
	}
	p.sealAll()
	p.pool.pending.Wait()
}

// decode runs the partition's handler on every message of c and validates the events.
func (c *chunk[K]) decode(p *processor[K]) {
	n := len(c.msgs)
	c.evs = growTo(c.evs, n)
	c.errs = growTo(c.errs, n)
	h := c.pt.handler
	for i, m := range c.msgs {
		ev, err := h(m)
		if err == nil {
			err = ev.Validate()
		}
		switch {
		case err != nil:
		case p.s.Sink == nil && (len(ev.Values) > 0 || len(ev.State) > 0):
			err = &EventError{Reason: "window values or state rows, and the consumer has no sink"}
		case p.s.ApplyEffects == nil && ev.Effect != nil:
			err = &EventError{Reason: "an effect, and the consumer has no ApplyEffects"}
		}
		if err == nil && p.s.states != nil {
			err = checkStateRows(ev.State, p.s.states)
		}
		c.evs[i], c.errs[i] = ev, err
	}
}

// finish marks c decoded and decides, in order, every chunk of its partition that is decoded
// and has no undecided chunk before it, unless another worker is doing so already: that one
// then finds c in turn.
func (w *workers[K]) finish(c *chunk[K]) {
	pt := c.pt
	pt.mu.Lock()
	c.ready = true
	if pt.applying {
		pt.mu.Unlock()
		return
	}
	pt.applying = true
	for len(pt.queue) > 0 && pt.queue[0].ready {
		head := pt.queue[0]
		pt.queue[0] = nil
		pt.queue = pt.queue[1:]
		pt.mu.Unlock()
		w.p.decideChunk(w.ctx, head)
		w.recycle(head)
		w.pending.Done()
		pt.mu.Lock()
	}
	pt.applying = false
	pt.mu.Unlock()
}

// recycle returns a decided chunk for reuse, dropping what it references.
func (w *workers[K]) recycle(c *chunk[K]) {
	clear(c.msgs)
	clear(c.evs)
	clear(c.errs)
	clear(c.fxRes)
	*c = chunk[K]{msgs: c.msgs[:0], arrivals: c.arrivals[:0], evs: c.evs[:0], errs: c.errs[:0],
		batch: c.batch[:0], fxRes: c.fxRes[:0]}
	w.free.Put(c)
}

// growTo returns s with length n, reusing its array when it is large enough.
func growTo[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}
