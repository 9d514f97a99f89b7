package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/dlq/dlqkafka"
	"github.com/streamledger/streamledger/examples/credits/internal/accounts"
	"github.com/streamledger/streamledger/examples/credits/internal/credit"
	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/sink"
)

// handle decides one message: applied, duplicate or dead-lettered, and records it in the
// partition's ledger. A failure that is not the credit's fault stops the service before the
// message is recorded, so no offset past it is ever committed.
func (s *Service) handle(m *kafka.Message) {
	tp := ledger.TopicPartition{Topic: *m.TopicPartition.Topic, Partition: m.TopicPartition.Partition}
	pt := s.parts[tp]
	d := Delivery{TopicPartition: tp, Offset: int64(m.TopicPartition.Offset)}
	if pt == nil || d.Offset <= pt.led.LastAdded() {
		return // not ours any more, or decided already in this assignment
	}
	if m.TimestampType != kafka.TimestampNotAvailable {
		d.Timestamp = m.Timestamp
	}
	c, err := credit.Decode(m.Value)
	if err != nil {
		s.deadLetter(pt, m, d, err)
		return
	}
	d.Credit = c
	if h := s.cfg.Hooks.BeforeApply; h != nil {
		h(d)
	}
	if s.aborted() {
		return
	}
	out, err := s.apply(s.work, c, d.Timestamp)
	if s.aborted() {
		return
	}
	if err != nil {
		if cause := refused(c, err); cause != nil {
			s.deadLetter(pt, m, d, cause)
			return
		}
		s.fatal = fmt.Errorf("service: credit %q at %s: %w", c.ID, d, err)
		s.cfg.Logger.Error("cannot apply a credit; stopping", "delivery", d.String(), "op_id", c.ID, "error", err)
		return
	}
	if err := pt.led.Add(d.Offset, ledger.Condition{}); err != nil {
		s.fatal = fmt.Errorf("service: ledger of %s: %w", d, err)
		return
	}
	o := Applied
	if out == sink.Duplicate {
		o = Duplicate
		s.counts.duplicate.Add(1)
	} else {
		s.counts.applied.Add(1)
	}
	s.cfg.Logger.Debug("credit decided", "delivery", d.String(), "op_id", c.ID, "outcome", o.String())
	if h := s.cfg.Hooks.Decided; h != nil {
		h(Decision{Delivery: d, Outcome: o})
	}
}

// apply runs the credit through the effect sink: marker and credit in one transaction.
func (s *Service) apply(ctx context.Context, c credit.Credit, ts time.Time) (sink.Outcome, error) {
	return s.effects.Apply(ctx, c.Operation(), func(ctx context.Context, tx pgx.Tx) (pgconn.CommandTag, error) {
		// Here the marker was just accepted: no marker of this id exists. A credit older than
		// the horizon may have had one that Prune deleted (a marker is created no earlier than
		// its record's timestamp and pruned only once older than the horizon), so it is not
		// applied. Judged inside the transaction, after the marker insert, so that a prune
		// running meanwhile cannot slip between the check and the credit.
		if s.cfg.Horizon > 0 {
			age := s.cfg.Clock().Sub(ts)
			if ts.IsZero() || age > s.cfg.Horizon {
				return pgconn.CommandTag{}, &HorizonError{ID: c.ID, Timestamp: ts, Age: age, Horizon: s.cfg.Horizon}
			}
		}
		return s.store.Credit(ctx, tx, c)
	})
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
	return nil
}

// deadLetter records the message in the ledger as waiting for its delivery report and hands it
// to the dead-letter producer.
func (s *Service) deadLetter(pt *part, m *kafka.Message, d Delivery, cause error) {
	if err := pt.led.Add(d.Offset, ledger.Ack()); err != nil {
		s.fatal = fmt.Errorf("service: ledger of %s: %w", d, err)
		return
	}
	s.send(pt, &letter{tp: d.TopicPartition, epoch: pt.epoch, offset: d.Offset, rec: dlqkafka.RecordFromMessage(m), cause: cause})
	s.counts.deadLettered.Add(1)
	class := dlq.ErrorClass(cause)
	s.cfg.Logger.Info("credit dead-lettered", "delivery", d.String(), "class", class, "error", cause)
	if h := s.cfg.Hooks.Decided; h != nil {
		h(Decision{Delivery: d, Outcome: DeadLettered, Class: class, Err: cause})
	}
}
