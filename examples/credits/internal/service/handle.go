package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/examples/credits/internal/accounts"
	"github.com/streamledger/streamledger/examples/credits/internal/credit"
	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/ledger/consumer"
	"github.com/streamledger/streamledger/sink"
)

// handle is the runtime's handler of the credits topic: it decodes the credit (an error
// dead-letters the message) and returns its effect.
func (s *Service) handle(m *kafka.Message) (consumer.Event[noKey], error) {
	s.cur, s.outcome = delivery(m), 0
	c, err := credit.Decode(m.Value)
	if err != nil {
		return consumer.Event[noKey]{}, err
	}
	s.cur.Credit = c
	d := s.cur
	return consumer.Event[noKey]{Effect: func(ctx context.Context) error { return s.apply(ctx, d) }}, nil
}

// apply is a credit's effect: marker and credit in one transaction of the effect sink. A
// refusal that is the credit's own fault is a rejection (dead-lettered); any other failure is
// returned as it is and stops the consumer before the credit is recorded.
func (s *Service) apply(ctx context.Context, d Delivery) error {
	if h := s.cfg.Hooks.BeforeApply; h != nil {
		h(d)
	}
	if err := ctx.Err(); err != nil {
		return err // aborted by the hook: no transaction
	}
	c := d.Credit
	// Here the marker was just accepted: no marker of this id exists. A credit older than the
	// horizon may have had one that Prune deleted (a marker is created no earlier than its
	// record's timestamp and pruned only once older than the horizon), so it is not applied.
	// Judged inside the transaction, after the marker insert, so that a prune running
	// meanwhile cannot slip between the check and the credit.
	check := func(int) error {
		if s.cfg.Horizon > 0 {
			age := s.cfg.Clock().Sub(d.Timestamp)
			if d.Timestamp.IsZero() || age > s.cfg.Horizon {
				return &HorizonError{ID: c.ID, Timestamp: d.Timestamp, Age: age, Horizon: s.cfg.Horizon}
			}
		}
		return nil
	}
	res, err := s.effects.Apply(ctx, []sink.Operation{c.Operation()}, s.store.Effect([]credit.Credit{c}, check))
	if err != nil {
		s.cfg.Logger.Error("cannot apply a credit; stopping", "delivery", d.String(), "op_id", c.ID, "error", err)
		return fmt.Errorf("service: credit %q: %w", c.ID, err)
	}
	switch r := res[0]; r.Outcome {
	case sink.Duplicate:
		s.outcome = Duplicate
		s.duplicate.Add(1)
	case sink.Applied:
		s.outcome = Applied
		s.applied.Add(1)
	default:
		if cause := refused(c, r.Err); cause != nil {
			return consumer.Reject(cause)
		}
		return fmt.Errorf("service: credit %q: %w", c.ID, r.Err)
	}
	return nil
}

// refused returns the dead-letter cause when err is the credit's own fault (nothing was
// applied and no marker stored), or nil for a failure of the infrastructure.
func refused(c credit.Credit, err error) error {
	var (
		conflict *sink.ConflictError
		rejected *accounts.RejectedError
		horizon  *HorizonError
	)
	switch {
	case errors.As(err, &conflict):
		return &refusal{class: ClassConflict, msg: fmt.Sprintf("credit %q: the id was used before for another credit", c.ID), err: err}
	case errors.Is(err, sink.ErrNoEffect):
		return &refusal{class: ClassUnknownAccount, msg: fmt.Sprintf("credit %q: account %q does not exist", c.ID, c.Account), err: err}
	case errors.As(err, &rejected), errors.As(err, &horizon):
		return err
	}
	return accounts.Refused(c, err)
}

// observer turns the runtime's hooks into the service's [Hooks], and ticks the runtime after
// every decision and delivery report when every message is committed on its own.
type observer struct{ s *Service }

func (o observer) OnMessage(mi consumer.MessageInfo) {
	s := o.s
	d := Decision{Delivery: s.cur}
	if d.TopicPartition != mi.TopicPartition || d.Offset != mi.Offset {
		d = Decision{Delivery: Delivery{TopicPartition: mi.TopicPartition, Offset: mi.Offset}} // not expected: handle runs first
	}
	if mi.Outcome == consumer.DeadLettered {
		d.Outcome, d.Class, d.Err = DeadLettered, dlq.ErrorClass(mi.Err), mi.Err
	} else {
		d.Outcome = s.outcome
	}
	s.cfg.Logger.Debug("credit decided", "delivery", d.String(), "op_id", d.Credit.ID, "outcome", d.Outcome.String(), "class", d.Class)
	if h := s.cfg.Hooks.Decided; h != nil {
		h(d)
	}
	o.tick()
}

func (o observer) OnDeadLetter(consumer.DeadLetterInfo) { o.tick() }

func (o observer) OnCommit(ci consumer.CommitInfo) {
	h := o.s.cfg.Hooks.Committed
	if h == nil || len(ci.Failed) == len(ci.Commits) {
		return
	}
	done := make([]ledger.Commit, 0, len(ci.Commits))
	for _, c := range ci.Commits {
		failed := false
		for _, f := range ci.Failed {
			failed = failed || f.TopicPartition == c.TopicPartition
		}
		if !failed {
			done = append(done, c)
		}
	}
	h(done)
}

func (o observer) tick() {
	if o.s.ticks == nil {
		return
	}
	select {
	case o.s.ticks <- time.Time{}:
	default:
	}
}
