package service

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/examples/credits/internal/accounts"
	"github.com/streamledger/streamledger/examples/credits/internal/credit"
	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/ledger/consumer"
	"github.com/streamledger/streamledger/sink"
)

// handle is the runtime's handler of the credits topic: it decodes the credit (an error
// dead-letters the message), which is the message's effect.
func handle(m *kafka.Message) (consumer.Event[noKey], error) {
	c, err := credit.Decode(m.Value)
	if err != nil {
		return consumer.Event[noKey]{}, err
	}
	return consumer.Event[noKey]{Effect: c}, nil
}

// applyBatch is the runtime's ApplyEffects: a batch of one partition's credits, in offset
// order, applied by the effect sink in one transaction, with each credit's marker. A credit
// the sink refuses for a reason of its own keeps its rejected or conflicting result (it is
// dead-lettered); one refused for another reason gets a result with no outcome, which stops
// the consumer before it; a failure of the batch is returned as it is and stops the consumer
// before the batch is recorded.
func (s *Service) applyBatch(ctx context.Context, batch []consumer.Effect) ([]sink.Result, error) {
	ds := make([]Delivery, len(batch))
	cs := make([]credit.Credit, len(batch))
	for i, e := range batch {
		ds[i] = delivery(e.Message)
		ds[i].Credit = e.Value.(credit.Credit)
		cs[i] = ds[i].Credit
	}
	if h := s.cfg.Hooks.BeforeApply; h != nil {
		h(ds)
	}
	if err := ctx.Err(); err != nil {
		return nil, err // aborted by the hook: no transaction
	}
	res, err := s.store.Apply(ctx, cs, func(i int) error { return s.checkHorizon(ds[i]) })
	if err != nil {
		s.cfg.Logger.Error("cannot apply a batch of credits; stopping", "from", ds[0].String(), "credits", len(ds), "error", err)
		return nil, fmt.Errorf("service: %d credits from %s: %w", len(ds), ds[0], err)
	}
	for i, r := range res {
		d := Decision{Delivery: ds[i]}
		switch r.Outcome {
		case sink.Applied:
			d.Outcome = Applied
			s.applied.Add(1)
		case sink.Duplicate:
			d.Outcome = Duplicate
			s.duplicate.Add(1)
		default:
			cause := refused(cs[i], r.Err)
			if cause == nil {
				res[i] = sink.Result{Err: fmt.Errorf("service: credit %q: %w", cs[i].ID, r.Err)}
				continue
			}
			res[i].Err = cause
		}
		s.decisions.put(d)
	}
	return res, nil
}

// checkHorizon refuses a credit older than the marker horizon. The effect sink calls it for a
// credit whose marker was just accepted, so no marker of its id exists: a credit older than
// the horizon may have had one that Prune deleted (a marker is created no earlier than its
// record's timestamp and pruned only once older than the horizon), so it is not applied.
// Judged inside the transaction, after the marker insert, so that a prune running meanwhile
// cannot slip between the check and the credit.
func (s *Service) checkHorizon(d Delivery) error {
	if s.cfg.Horizon <= 0 {
		return nil
	}
	age := s.cfg.Clock().Sub(d.Timestamp)
	if d.Timestamp.IsZero() || age > s.cfg.Horizon {
		return &HorizonError{ID: d.Credit.ID, Timestamp: d.Timestamp, Age: age, Horizon: s.cfg.Horizon}
	}
	return nil
}

// refused returns the dead-letter cause when err, the Err of a rejected or conflicting result,
// is the credit's own fault (nothing was applied and no marker stored), or nil for a failure
// of the infrastructure.
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

// decisions hands the outcome of each credit from its batch to the message hook, which the
// runtime calls after the batch, on the same worker, for each message of the batch in turn.
// Workers of different partitions use it at once.
type decisions struct {
	mu sync.Mutex
	m  map[msgKey]Decision
}

type msgKey struct {
	tp     ledger.TopicPartition
	offset int64
}

func (ds *decisions) put(d Decision) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.m == nil {
		ds.m = make(map[msgKey]Decision)
	}
	ds.m[msgKey{d.TopicPartition, d.Offset}] = d
}

func (ds *decisions) take(tp ledger.TopicPartition, offset int64) (Decision, bool) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	k := msgKey{tp, offset}
	d, ok := ds.m[k]
	delete(ds.m, k)
	return d, ok
}

// observer turns the runtime's hooks into the service's [Hooks], and ticks the runtime after
// every decision and delivery report when every message is committed on its own.
type observer struct{ s *Service }

func (o observer) OnMessage(mi consumer.MessageInfo) {
	s := o.s
	// The batch's outcome of a credit; a message that did not decode has none.
	d, ok := s.decisions.take(mi.TopicPartition, mi.Offset)
	if !ok {
		d = Decision{Delivery: Delivery{TopicPartition: mi.TopicPartition, Offset: mi.Offset}}
	}
	if mi.Decision == consumer.DeadLettered {
		d.Outcome, d.Class, d.Err = DeadLettered, dlq.ErrorClass(mi.Err), mi.Err
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
	if o.s.everyMessage {
		o.s.c.Tick()
	}
}
