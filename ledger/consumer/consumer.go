package consumer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/streamledger/streamledger/ledger"
)

// Consumer is a Kafka consumer that aggregates into windows and commits through the ledger.
// Create one with [New] and run it with [Consumer.Run].
type Consumer[K comparable] struct {
	s *settings[K]
	p *processor[K]

	running atomic.Bool
	closing atomic.Bool // the client is closing: rebalance callbacks leave the state alone
	// rebalances counts the rebalance callbacks, which run inside Poll on Run's goroutine.
	rebalances atomic.Uint64

	abortOnce  sync.Once
	abort      chan struct{}
	tickAsked  chan struct{}                      // Tick's requests, at most one pending
	cancelWork atomic.Pointer[context.CancelFunc] // cancels work, once Run has made it

	work context.Context // Run's context without its cancellation, cancelled by Abort

	stops map[ledger.TopicPartition]int64 // a bounded run's stop offsets, computed once each
}

// New validates cfg and returns a Consumer. It checks every librdkafka property by making a
// client and closing it at once, so that a misspelled or invalid one fails here, naming it;
// it does not consume: Run does.
func New[K comparable](cfg Config[K]) (*Consumer[K], error) {
	s, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	if err := checkClient(s.kafka); err != nil {
		return nil, err
	}
	c := &Consumer[K]{s: s, abort: make(chan struct{}), tickAsked: make(chan struct{}, 1), stops: map[ledger.TopicPartition]int64{}}
	if c.p, err = newProcessor(s, nil); err != nil {
		return nil, err
	}
	c.p.live.started(time.Now())
	return c, nil
}

// Counters returns the running totals. It is safe to call from any goroutine.
func (c *Consumer[K]) Counters() Counters { return c.p.counters.snapshot() }

// Tick asks Run for a tick (state flushed, closed windows written, offsets committed) as
// soon as its loop comes round, once the current Poll has returned. Calls while one is
// pending make one tick. It does not wait for the tick, and is safe to call from any
// goroutine, hooks included. A consumer whose FlushInterval is negative ticks on request;
// with a positive one, Tick only brings the next tick forward.
func (c *Consumer[K]) Tick() {
	select {
	case c.tickAsked <- struct{}{}:
	default:
	}
}

// Abort abandons the graceful shutdown (or the run, if called before Run's context is done):
// no further write or commit is attempted, and Run closes the client and returns ErrAborted
// without waiting for anything but the client (itself bounded by what ShutdownTimeout left
// it, at least a quarter of it). What was not
// committed is redelivered to the next owner. Call it on a second interrupt, for example. It is
// safe to call from any goroutine, more than once.
//
// Abort cancels the context of a running [Config.ApplyEffects] before it returns, so that a
// batch of effects (or a hook) that calls it stops right there, as a crash would: no later
// message is decided and nothing more is committed.
func (c *Consumer[K]) Abort() {
	c.abortOnce.Do(func() {
		close(c.abort)
		if cancel := c.cancelWork.Load(); cancel != nil {
			(*cancel)()
		}
	})
}

func (c *Consumer[K]) aborted() bool {
	select {
	case <-c.abort:
		return true
	default:
		return false
	}
}

// Run consumes until ctx is cancelled, then shuts down gracefully: it stops taking messages,
// waits for the delivery reports of dead letters in flight, flushes state, writes what closed,
// commits what is durable (never past it), gives up its partitions and closes the client. It
// returns within ShutdownTimeout of the start of the shutdown: the work before the close gets
// until three quarters of it have passed, and the close what remains, at least a quarter
// (see [Config.ShutdownTimeout]). After a fatal error or an Abort it returns once the client
// is closed, within a quarter of ShutdownTimeout. It returns nil after a graceful shutdown, and an
// error if the consumer cannot go on (ErrAssign, ErrUndecodable, a fatal client error,
// ErrInternal, or ErrEffect or ErrLostRecords after the graceful shutdown) or the shutdown was cut short
// (ErrAborted, ErrCloseTimeout).
//
// Run may be called once.
func (c *Consumer[K]) Run(ctx context.Context) error {
	if !c.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	kc, err := kafka.NewConsumer(&c.s.kafka)
	if err != nil {
		return fmt.Errorf("%w: creating the Kafka client: %w", ErrConfig, err)
	}
	c.p.cl = kc
	log := c.s.Logger
	log.Info("consumer starting", "topics", c.s.topics, redacted(c.s.kafka))

	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	c.cancelWork.Store(&cancelWork)
	go func() { // an Abort that came before the Store
		select {
		case <-c.abort:
			cancelWork()
		case <-work.Done():
		}
	}()
	c.work = work
	c.p.stopRequested = ctx.Done()
	c.p.startWorkers(work)
	defer c.p.stopWorkers()
	c.p.live.started(time.Now())
	defer c.p.live.stopped.Store(true)
	c.p.tickedAt = c.p.now() // a caught-up tick waits FlushWhenCaughtUp from the start too

	if err := kc.SubscribeTopics(c.s.topics, c.rebalance); err != nil {
		return errors.Join(fmt.Errorf("consumer: subscribe to %v: %w", c.s.topics, err), c.closeClient(kc, time.Time{}))
	}
	c.p.subscribed()
	ticks, stopTicks := c.s.ticker()
	defer stopTicks()
	pollMs := max(int(c.s.pollTimeout/time.Millisecond), 1)
	for {
		if done, err := c.stopping(kc, ctx); done {
			return err
		}
		ms := pollMs
		if c.p.job != nil {
			// Writes in flight: come back soon to commit what they cover, even if no
			// message comes meanwhile.
			ms = min(ms, jobPollMs)
		}
		ev := kc.Poll(ms)
		c.dispatch(kc, ev)
		c.burst(kc, ev)
		if c.aborted() {
			continue // a hook or an effect aborted: commit nothing more
		}
		c.p.letters(work)
		c.p.poll(work)
		select {
		case <-ticks:
			c.p.tick(work, CommitTick)
		case <-c.tickAsked:
			c.p.tick(work, CommitTick)
		default:
			if ev == nil {
				c.p.caughtUp(work)
			}
		}
		c.p.checkBuffer(work)
		c.p.checkAssignment()
		if c.p.boundedDone() {
			c.s.Logger.Info("every partition reached its stop offset, written and committed")
			c.p.reportIncomplete(work)
			return c.shutdown(kc)
		}
	}
}

// ticker returns the channel of the periodic tick and the function that stops it: a channel
// that is never ready (nil) when FlushInterval is negative.
func (s *settings[K]) ticker() (<-chan time.Time, func()) {
	if s.FlushInterval <= 0 {
		return nil, func() {}
	}
	t := time.NewTicker(s.FlushInterval)
	return t.C, t.Stop
}

// pollBurst is how many more messages the loop takes, without waiting, after one Poll
// returned a message, before it looks at ticks, writes and the buffer bound again: they are
// the loop's per-poll work, which then runs once for that many messages rather than for each.
const pollBurst = 64

// burst dispatches up to pollBurst more messages that are already fetched, after Poll
// returned first. It stops at the first Poll that returns something else than a message: no
// message waiting (which is not the wait for one that tells the loop it is caught up), a
// client event, a rebalance or a stop, after which the loop looks at its state first. Without
// workers (Workers < 0) there is no burst: the loop decides each message as it dispatches it,
// and commits what that made durable before it polls the next.
func (c *Consumer[K]) burst(kc *kafka.Consumer, first kafka.Event) {
	if _, ok := first.(*kafka.Message); !ok || c.p.pool.inline {
		return
	}
	seen := c.rebalances.Load()
	for range pollBurst {
		ev := kc.Poll(0)
		if ev == nil {
			return
		}
		c.dispatch(kc, ev)
		if _, ok := ev.(*kafka.Message); !ok || c.rebalances.Load() != seen || c.p.stop.any.Load() {
			return
		}
	}
}

// stopping reports whether Run must return now, and with what: after an Abort, a fatal error,
// or (through the graceful shutdown) a cancelled context or a failed effect.
func (c *Consumer[K]) stopping(kc *kafka.Consumer, ctx context.Context) (bool, error) {
	fatal, halt := c.p.stop.errs()
	switch {
	case c.aborted():
		c.closing.Store(true)
		return true, errors.Join(ErrAborted, c.closeClient(kc, time.Time{}))
	case ctx.Err() != nil:
		return true, c.shutdown(kc)
	case fatal != nil:
		c.closing.Store(true)
		return true, errors.Join(fatal, c.closeClient(kc, time.Time{}))
	case halt != nil:
		return true, c.shutdown(kc)
	}
	return false, nil
}

// jobPollMs bounds a Poll while writes are in flight.
const jobPollMs = 10

func (c *Consumer[K]) dispatch(kc *kafka.Consumer, ev kafka.Event) {
	switch e := ev.(type) {
	case nil:
	case *kafka.Message:
		if e.TopicPartition.Error != nil {
			c.s.Logger.Warn("consume error", "partition", e.TopicPartition.String(), "error", e.TopicPartition.Error)
			return
		}
		c.p.dispatch(e)
	case kafka.Error:
		if e.IsFatal() {
			c.p.stop.setFatal(fmt.Errorf("consumer: fatal client error: %w", e))
			return
		}
		if e.Code() == kafka.ErrAutoOffsetReset {
			c.outOfRange(kc, e)
			return
		}
		c.s.Logger.Warn("client error", "error", e, "code", e.Code().String())
	case kafka.PartitionEOF, kafka.OffsetsCommitted:
	default:
		c.s.Logger.Debug("client event ignored", "event", e.String())
	}
}

// rebalance is the callback of SubscribeTopics. It runs inside Poll, on Run's goroutine, except
// during Close, where it leaves the (already given up) state alone and lets the client do the
// default.
func (c *Consumer[K]) rebalance(kc *kafka.Consumer, ev kafka.Event) error {
	c.rebalances.Add(1)
	if c.closing.Load() {
		return nil
	}
	cooperative := kc.GetRebalanceProtocol() == "COOPERATIVE"
	switch e := ev.(type) {
	case kafka.AssignedPartitions:
		offsets, err := c.onAssign(kc, e.Partitions)
		if err != nil {
			c.p.stop.setFatal(err)
			c.s.Logger.Error("assignment failed; stopping", "error", err)
			return err
		}
		if cooperative {
			err = kc.IncrementalAssign(offsets)
		} else {
			err = kc.Assign(offsets)
		}
		if err != nil {
			c.p.stop.setFatal(fmt.Errorf("%w: assign: %w", ErrAssign, err))
			return err
		}
		// A partition paused before it was last revoked may still be paused in the client;
		// one that starts at its stop offset (a bounded run) stays paused.
		if len(offsets) > 0 {
			_ = kc.Resume(offsets)
		}
		c.p.assignedOnce = true
		c.p.pauseEndedAll()
		c.p.live.assigned(time.Now(), len(c.p.order))
	case kafka.RevokedPartitions:
		lost := kc.AssignmentLost()
		tps := make([]ledger.TopicPartition, 0, len(e.Partitions))
		for _, tp := range e.Partitions {
			if tp.Topic != nil {
				tps = append(tps, ledger.TopicPartition{Topic: *tp.Topic, Partition: tp.Partition})
			}
		}
		c.p.revoke(c.work, tps, lost, CommitRevoke)
		c.p.live.assigned(time.Now(), len(c.p.order))
		var err error
		if cooperative {
			err = kc.IncrementalUnassign(e.Partitions)
		} else {
			err = kc.Unassign()
		}
		if err != nil {
			c.s.Logger.Warn("unassign failed", "error", err)
		}
	}
	return nil
}

// onAssign reads the committed offsets and metadata of newly assigned partitions, restores
// them in the processor, and returns them with the offsets to start from.
func (c *Consumer[K]) onAssign(kc *kafka.Consumer, parts []kafka.TopicPartition) ([]kafka.TopicPartition, error) {
	if len(parts) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(c.work, c.s.AssignTimeout)
	defer cancel()
	query := make([]kafka.TopicPartition, len(parts))
	for i, tp := range parts {
		query[i] = kafka.TopicPartition{Topic: tp.Topic, Partition: tp.Partition}
	}
	var (
		committed []kafka.TopicPartition
		err       error
	)
	for attempt := 1; ; attempt++ {
		ms := 10_000
		if d, ok := ctx.Deadline(); ok {
			ms = max(min(int(time.Until(d)/time.Millisecond), ms), 1)
		}
		committed, err = kc.Committed(query, ms)
		if err == nil || ctx.Err() != nil {
			break
		}
		c.s.Logger.Warn("reading committed offsets failed; retrying", "attempt", attempt, "error", err)
		select {
		case <-ctx.Done():
		case <-time.After(min(time.Duration(attempt)*200*time.Millisecond, 2*time.Second)):
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: reading committed offsets: %w", ErrAssign, err)
	}
	as := make([]assignment, 0, len(committed))
	for _, tp := range committed {
		if tp.Topic == nil {
			continue
		}
		a := assignment{tp: ledger.TopicPartition{Topic: *tp.Topic, Partition: tp.Partition}, committed: -1, start: -1, stop: -1, logStart: -1}
		if tp.Error == nil && tp.Offset >= 0 {
			a.committed = int64(tp.Offset)
		}
		if tp.Metadata != nil {
			a.metadata = *tp.Metadata
		}
		as = append(as, a)
	}
	all := c.topicPartitions(kc, as, ctx)
	if c.s.Until.bounded() {
		tps := slices.Clone(all)
		for _, a := range as {
			tps = append(tps, a.tp)
		}
		if err := c.stopOffsets(ctx, kc, tps); err != nil {
			return nil, err
		}
		for i := range as {
			as[i].stop = c.stops[as[i].tp]
		}
	}
	if err := c.startOffsets(ctx, kc, as); err != nil {
		return nil, err
	}
	if err := c.p.assign(ctx, as, all); err != nil {
		return nil, err
	}
	c.p.lostAtAssign(c.work, as)
	offsets := make([]kafka.TopicPartition, len(as))
	for i, a := range as {
		topic := a.tp.Topic
		offsets[i] = kafka.TopicPartition{Topic: &topic, Partition: a.tp.Partition, Offset: kafka.OffsetInvalid}
		if a.start >= 0 {
			offsets[i].Offset = kafka.Offset(a.start)
		}
	}
	return offsets, nil
}

// topicPartitions returns every partition of the topics of as, from the client's metadata,
// so that all of them are registered with the sink before anything is decided. A topic whose
// metadata cannot be read contributes only its assigned partitions; the others register
// when they are assigned.
func (c *Consumer[K]) topicPartitions(kc *kafka.Consumer, as []assignment, ctx context.Context) []ledger.TopicPartition {
	if c.s.Sink == nil && !c.s.Until.bounded() {
		return nil
	}
	var out []ledger.TopicPartition
	seen := map[string]bool{}
	for _, a := range as {
		topic := a.tp.Topic
		if seen[topic] {
			continue
		}
		seen[topic] = true
		ms := 5_000
		if d, ok := ctx.Deadline(); ok {
			ms = max(min(int(time.Until(d)/time.Millisecond), ms), 1)
		}
		md, err := kc.GetMetadata(&topic, false, ms)
		if err == nil && md.Topics[topic].Error.Code() != kafka.ErrNoError {
			err = md.Topics[topic].Error
		}
		if err != nil {
			c.s.Logger.Warn("reading the topic's partitions failed; registering the assigned ones only",
				"topic", topic, "error", err)
			continue
		}
		for _, pm := range md.Topics[topic].Partitions {
			out = append(out, ledger.TopicPartition{Topic: topic, Partition: pm.ID})
		}
	}
	return out
}

// shutdown is the graceful end of Run, within ShutdownTimeout: the work before closing the
// client has until the close's least share is left (closeShare), and the close gets the rest.
func (c *Consumer[K]) shutdown(kc *kafka.Consumer) error {
	log := c.s.Logger
	log.Info("consumer stopping: writing and committing what is durable")
	start := time.Now()
	end := start.Add(c.s.ShutdownTimeout)
	ctx, cancel := context.WithDeadline(c.work, end.Add(-c.s.ShutdownTimeout/closeShare))
	defer cancel()
	c.p.barrier()
	c.p.waitDeadLetters(ctx)
	c.p.waitCommit(ctx)
	// The same as a revocation of every partition: state flushed, closes written, the durable
	// prefix committed (never past it), state dropped; then the client lets go of them.
	owned := c.p.owned()
	c.p.revoke(ctx, c.p.assignedTPs(), false, CommitShutdown)
	aborted := ctx.Err() != nil
	c.closing.Store(true)
	if len(owned) > 0 {
		var err error
		if kc.GetRebalanceProtocol() == "COOPERATIVE" {
			err = kc.IncrementalUnassign(owned)
		} else {
			err = kc.Unassign()
		}
		if err != nil {
			log.Warn("unassign failed", "error", err)
		}
	}
	err := c.closeClient(kc, end)
	if aborted {
		err = errors.Join(fmt.Errorf("%w: %w", ErrAborted, context.Cause(ctx)), err)
	}
	fatal, halt := c.p.stop.errs()
	err = errors.Join(fatal, halt, err)
	if err == nil {
		log.Info("consumer stopped")
	}
	return err
}

// closeClient closes the client on a goroutine of its own, so that a Close that hangs
// (confluent-kafka-go issue 189) costs at most what is left until end, and at least the
// close's share of ShutdownTimeout (closeShare) when less is left; a zero end gives it that
// share.
func (c *Consumer[K]) closeClient(kc *kafka.Consumer, end time.Time) error {
	c.closing.Store(true)
	budget := c.s.ShutdownTimeout / closeShare
	if !end.IsZero() {
		budget = max(time.Until(end), budget)
	}
	done := make(chan error, 1)
	go func() { done <- kc.Close() }()
	t := time.NewTimer(budget)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
	}
	c.s.Logger.Error("client close timed out; leaving it behind", "timeout", budget.Round(time.Millisecond))
	return fmt.Errorf("%w after %v", ErrCloseTimeout, budget.Round(time.Millisecond))
}

// checkClient makes a client of km and closes it: librdkafka refuses an unknown or invalid
// property when the client is made.
func checkClient(km kafka.ConfigMap) error {
	probe := make(kafka.ConfigMap, len(km))
	for k, v := range km {
		probe[k] = v
	}
	kc, err := kafka.NewConsumer(&probe)
	if err != nil {
		return fmt.Errorf("%w: Kafka: %w", ErrConfig, err)
	}
	return kc.Close()
}
