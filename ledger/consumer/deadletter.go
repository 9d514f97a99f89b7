package consumer

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/internal/retry"
	"github.com/streamledger/streamledger/ledger"
)

// letter is one dead letter owned by the loop: sent, waiting for its report, or waiting to be
// sent again.
type letter struct {
	tp      ledger.TopicPartition
	epoch   uint64 // the assignment of tp it belongs to; reports for another one are stale
	offset  int64
	rec     dlq.Record
	cause   error
	attempt int
	due     time.Time
}

type report struct {
	l   *letter
	err error
}

// inbox hands delivery reports from the producer's goroutines to the loop without ever
// blocking the producer.
type inbox struct {
	mu     sync.Mutex
	items  []report
	notify chan struct{} // capacity 1: "items is not empty"
}

func newInbox() *inbox { return &inbox{notify: make(chan struct{}, 1)} }

func (b *inbox) put(r report) {
	b.mu.Lock()
	b.items = append(b.items, r)
	b.mu.Unlock()
	select {
	case b.notify <- struct{}{}:
	default:
	}
}

func (b *inbox) take(dst []report) []report {
	b.mu.Lock()
	defer b.mu.Unlock()
	dst = append(dst, b.items...)
	clear(b.items)
	b.items = b.items[:0]
	return dst
}

// deadLetterSendTimeout bounds one Send: it runs on the worker that decides the partition, so
// a dead-letter cluster that does not answer must not hold the partition's decisions; a send
// that fails is sent again after a backoff.
const deadLetterSendTimeout = time.Second

// send hands l to the dead-letter producer. It runs on the worker deciding the message, or
// on the loop for a letter sent again. A send that fails at once is reported like a failed
// delivery: the loop schedules it again when it drains the reports.
func (p *processor[K]) send(ctx context.Context, pt *part[K], l *letter) {
	if l.attempt == 0 {
		pt.letterBytes.Add(l.bytes())
	}
	l.attempt++
	pt.inflight++
	sctx, cancel := context.WithTimeout(ctx, deadLetterSendTimeout)
	defer cancel()
	err := p.s.DeadLetters.Send(sctx, l.rec, l.cause, func(err error) {
		p.inbox.put(report{l: l, err: err})
	})
	if err != nil {
		p.inbox.put(report{l: l, err: err})
	}
}

// failedLetter logs a failed send or delivery and schedules the letter again: it is never
// acked, so its offset and every one after it stay uncommitted until it is delivered.
func (p *processor[K]) failedLetter(l *letter, err error) {
	p.counters.dlFail.Add(1)
	backoff := retry.Backoff(p.s.deadLetterRetry, l.attempt)
	l.due = p.s.Clock().Add(backoff)
	p.log.Warn("dead letter not delivered; sending it again after a backoff",
		"partition", l.tp.String(), "offset", l.offset, "attempt", l.attempt, "backoff", backoff, "error", err)
	p.resends = append(p.resends, l)
}

// drainReports applies the delivery reports that arrived: a positive one acks the entry,
// a failed one schedules the letter again. Reports of partitions no longer owned (or owned
// again under a new assignment) are dropped: that ledger is gone. It runs on the loop at a
// barrier, as it changes the partitions' ledgers.
func (p *processor[K]) drainReports() {
	p.reportBuf = p.inbox.take(p.reportBuf[:0])
	for i, r := range p.reportBuf {
		p.reportBuf[i] = report{}
		pt := p.parts[r.l.tp]
		if pt == nil || pt.epoch != r.l.epoch {
			continue
		}
		pt.inflight--
		for _, h := range p.s.hooks.deadLetter {
			h.OnDeadLetter(DeadLetterInfo{TopicPartition: r.l.tp, Offset: r.l.offset, Err: r.err, Attempt: r.l.attempt})
		}
		if r.err != nil {
			p.failedLetter(r.l, r.err)
			continue
		}
		pt.letterBytes.Add(-r.l.bytes())
		if err := pt.led.Ack(r.l.offset); err != nil {
			p.fail(err, "ack of a dead letter", "partition", r.l.tp.String(), "offset", r.l.offset)
		}
	}
}

// letters applies the delivery reports that arrived and sends again the letters whose
// backoff has passed, when there is any of either and the polling goroutine decides messages
// itself (Workers < 0); at most once per reportEvery. With workers, ticks do it: applying a
// report waits until every dispatched message is decided, and a flood of dead letters must
// not stop the workers at every poll.
func (p *processor[K]) letters(ctx context.Context) {
	if p.pool == nil || !p.pool.inline {
		return
	}
	now := p.now()
	if now.Sub(p.lettersAt) < reportEvery {
		return
	}
	if len(p.inbox.notify) == 0 && !p.resendsDue() {
		return
	}
	p.lettersAt = now
	p.barrier()
	p.drainReports()
	p.resendDue(ctx)
}

// reportEvery spaces the loop's handling of delivery reports outside ticks.
const reportEvery = 10 * time.Millisecond

// resendsDue reports whether a letter's backoff has passed.
func (p *processor[K]) resendsDue() bool {
	if len(p.resends) == 0 {
		return false
	}
	now := p.s.Clock()
	for _, l := range p.resends {
		if !now.Before(l.due) {
			return true
		}
	}
	return false
}

// resendDue sends again the letters whose backoff has passed. It runs at a barrier.
func (p *processor[K]) resendDue(ctx context.Context) {
	if len(p.resends) == 0 {
		return
	}
	now := p.s.Clock()
	keep := p.resends[:0]
	var due []*letter
	for _, l := range p.resends {
		pt := p.parts[l.tp]
		switch {
		case pt == nil || pt.epoch != l.epoch:
			// the partition was given up: the next owner decides the message again
		case !now.Before(l.due):
			due = append(due, l)
		default:
			keep = append(keep, l)
		}
	}
	clear(p.resends[len(keep):])
	p.resends = keep
	for _, l := range due {
		p.send(ctx, p.parts[l.tp], l)
	}
}

// inflight counts the dead letters of owned partitions still waiting for a report.
func (p *processor[K]) inflight() int {
	n := 0
	for _, pt := range p.parts {
		n += pt.inflight
	}
	return n
}

// waitDeadLetters waits, until ctx is done, for the reports of the letters in flight, so that
// a shutdown commits the ones confirmed meanwhile.
func (p *processor[K]) waitDeadLetters(ctx context.Context) {
	for p.inflight() > 0 {
		select {
		case <-p.inbox.notify:
			p.drainReports()
		case <-ctx.Done():
			return
		}
	}
}

// bytes estimates the memory a letter holds until it is delivered: its record's key, value
// and headers.
func (l *letter) bytes() int64 {
	n := int64(len(l.rec.Key) + len(l.rec.Value) + 128)
	for _, h := range l.rec.Headers {
		n += int64(len(h.Key) + len(h.Value) + 32)
	}
	return n
}

// logDeadLetters logs, at INFO, one summary of the messages of parts dead-lettered since the
// last one: how many, by topic and error class (each letter is logged at DEBUG as it is
// dead-lettered). A tick logs one for every partition, a revocation one for those it gives
// up. It runs at a barrier, as it reads the partitions' counts.
func (p *processor[K]) logDeadLetters(parts []*part[K]) {
	byTopic := map[string]map[string]int64{}
	var n int64
	for _, pt := range parts {
		if len(pt.deadSince) == 0 {
			continue
		}
		classes := byTopic[pt.tp.Topic]
		if classes == nil {
			classes = map[string]int64{}
			byTopic[pt.tp.Topic] = classes
		}
		for class, k := range pt.deadSince {
			classes[class] += k
			n += k
		}
		clear(pt.deadSince)
	}
	if n == 0 {
		return
	}
	groups := make([]any, 0, len(byTopic))
	for _, topic := range slices.Sorted(maps.Keys(byTopic)) {
		classes := byTopic[topic]
		attrs := make([]any, 0, 2*len(classes))
		for _, class := range slices.Sorted(maps.Keys(classes)) {
			attrs = append(attrs, class, classes[class])
		}
		groups = append(groups, slog.Group(topic, attrs...))
	}
	p.log.Info("messages dead-lettered since the last summary", "count", n, slog.Group("by_class", groups...))
}
