package service

import (
	"context"
	"sync"
	"time"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/dlq/dlqkafka"
	"github.com/streamledger/streamledger/ledger"
)

// sendTimeout bounds one Send: the topic lookup and the wait for room in the producer's queue.
const sendTimeout = 10 * time.Second

// letter is one dead letter owned by the loop.
type letter struct {
	tp     ledger.TopicPartition
	epoch  uint64
	offset int64
	rec    dlq.Record
	cause  error
	due    time.Time
}

type report struct {
	l   *letter
	err error
}

// inbox hands delivery reports from the producer's goroutine to the loop without blocking
// the producer.
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

func (b *inbox) take() []report {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.items
	b.items = nil
	return out
}

func (s *Service) send(pt *part, l *letter) {
	if s.aborted() {
		return
	}
	pt.inflight++
	ctx, cancel := context.WithTimeout(s.work, sendTimeout)
	defer cancel()
	err := s.cfg.DeadLetters.Send(ctx, l.rec, l.cause, func(d dlqkafka.Delivery) {
		s.inbox.put(report{l: l, err: d.Err})
	})
	if err != nil {
		pt.inflight--
		s.later(l, err)
	}
}

// later schedules a letter that was not delivered to be sent again. It is never acked
// meanwhile, so its offset and every later one of its partition stay uncommitted.
func (s *Service) later(l *letter, err error) {
	l.due = time.Now().Add(s.cfg.DeadLetterBackoff)
	s.cfg.Logger.Warn("dead letter not delivered; sending it again", "partition", l.tp.String(), "offset", l.offset,
		"backoff", s.cfg.DeadLetterBackoff, "error", err)
	s.resends = append(s.resends, l)
}

// drainReports applies the delivery reports that arrived: a positive one acks the ledger
// entry, a failed one schedules the letter again. Reports for an assignment that is gone
// are dropped: the partition's next owner decides the message again.
func (s *Service) drainReports() {
	for _, r := range s.inbox.take() {
		pt := s.parts[r.l.tp]
		if pt == nil || pt.epoch != r.l.epoch {
			continue
		}
		pt.inflight--
		if r.err != nil {
			s.later(r.l, r.err)
			continue
		}
		if err := pt.led.Ack(r.l.offset); err != nil && s.fatal == nil {
			s.fatal = err
		}
	}
}

func (s *Service) resendDue() {
	if len(s.resends) == 0 {
		return
	}
	now := time.Now()
	var keep, due []*letter
	for _, l := range s.resends {
		pt := s.parts[l.tp]
		switch {
		case pt == nil || pt.epoch != l.epoch:
		case now.Before(l.due):
			keep = append(keep, l)
		default:
			due = append(due, l)
		}
	}
	s.resends = keep
	for _, l := range due {
		s.send(s.parts[l.tp], l)
	}
}

func (s *Service) inflight() int {
	n := 0
	for _, pt := range s.parts {
		n += pt.inflight
	}
	return n
}

// waitDeadLetters waits until every letter in flight is reported, or ctx is done.
func (s *Service) waitDeadLetters(ctx context.Context) {
	for s.inflight() > 0 && !s.aborted() {
		select {
		case <-s.inbox.notify:
			s.drainReports()
		case <-ctx.Done():
			return
		}
	}
}
