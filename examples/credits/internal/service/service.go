package service

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/streamledger/streamledger/examples/credits/internal/accounts"
	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/sink/postgres"
)

// Service consumes credits and applies each once through the effect sink. Create one with
// [New]; [Service.Run] runs one consumer, once.
type Service struct {
	cfg     Config
	store   *accounts.Store
	effects *postgres.Effects

	// Owned by the loop goroutine (Run and the rebalance callback, which runs inside Poll).
	tracker    *ledger.Tracker
	parts      map[ledger.TopicPartition]*part
	epoch      uint64
	resends    []*letter
	fatal      error
	lastCommit time.Time

	inbox   *inbox
	work    context.Context // Run's context without its cancellation; cancelled by Abort
	counts  counters
	running atomic.Bool
	closing atomic.Bool // the client is closing: the rebalance callback leaves the ledger alone

	abortOnce sync.Once
	abort     chan struct{}
}

// part is one owned partition.
type part struct {
	led      *ledger.Partition
	epoch    uint64 // tells this assignment from a later one of the same partition
	inflight int    // dead letters waiting for their delivery report
}

// Counters are running totals of decisions and commits.
type Counters struct {
	Applied, Duplicate, DeadLettered int64
	// Commits counts offset commits the broker accepted.
	Commits int64
}

type counters struct{ applied, duplicate, deadLettered, commits atomic.Int64 }

// New validates cfg and returns a Service. It touches neither Kafka nor the database.
func New(cfg Config) (*Service, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	fx, err := postgres.NewEffects(cfg.Pool, postgres.EffectConfig{
		Schema: cfg.Schema, Table: cfg.Markers, Horizon: cfg.Horizon, SourceRetention: max(cfg.SourceRetention, 0),
		Retry: cfg.Retry, Clock: cfg.Clock, Rand: cfg.Rand, Hooks: cfg.SinkHooks,
	})
	if err != nil {
		return nil, fmt.Errorf("service: effect sink: %w", err)
	}
	st, err := accounts.New(cfg.Pool, accounts.Config{Schema: cfg.Schema, Markers: cfg.Markers, Clock: cfg.Clock})
	if err != nil {
		return nil, err
	}
	return &Service{
		cfg: cfg, store: st, effects: fx,
		tracker: ledger.NewTracker(), parts: map[ledger.TopicPartition]*part{},
		inbox: newInbox(), abort: make(chan struct{}),
	}, nil
}

// Migrate creates the accounts, entries and marker tables if they do not exist.
func (s *Service) Migrate(ctx context.Context) error {
	if err := s.store.Migrate(ctx); err != nil {
		return err
	}
	return s.effects.Migrate(ctx)
}

// Store returns the accounts store the service credits.
func (s *Service) Store() *accounts.Store { return s.store }

// Prune deletes the markers older than the horizon and returns how many it deleted.
func (s *Service) Prune(ctx context.Context) (int64, error) { return s.effects.Prune(ctx) }

// Counters returns the running totals; safe from any goroutine.
func (s *Service) Counters() Counters {
	return Counters{
		Applied: s.counts.applied.Load(), Duplicate: s.counts.duplicate.Load(),
		DeadLettered: s.counts.deadLettered.Load(), Commits: s.counts.commits.Load(),
	}
}

// Abort stops the consumer where it is, as a crash would: no further transaction, commit or
// dead letter is started, a transaction in progress is abandoned (rolled back unless it
// already committed), and Run closes the client and returns [ErrAborted]. What was not
// committed is redelivered to the next consumer of the group. Safe from any goroutine, more
// than once.
func (s *Service) Abort() { s.abortOnce.Do(func() { close(s.abort) }) }

func (s *Service) aborted() bool {
	select {
	case <-s.abort:
		return true
	default:
		return false
	}
}

// Run consumes credits until ctx is cancelled, then shuts down gracefully: it waits (up to
// ShutdownTimeout) for the delivery reports of dead letters in flight, commits the durable
// prefix of every partition, and closes the client. It returns nil after a graceful
// shutdown; the error of a failure the service cannot decide past (a database that stays
// unreachable after the sink's retries, a fatal client error), after committing what is
// durable; or [ErrAborted] after [Service.Abort]. A restart resumes at the first credit not
// committed.
func (s *Service) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	kc, err := kafka.NewConsumer(&s.cfg.Kafka)
	if err != nil {
		return fmt.Errorf("%w: Kafka client: %w", ErrConfig, err)
	}
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	go func() {
		select {
		case <-s.abort:
			cancelWork()
		case <-work.Done():
		}
	}()
	s.work = work
	if err := kc.SubscribeTopics([]string{s.cfg.Topic}, s.rebalance); err != nil {
		return errors.Join(fmt.Errorf("service: subscribe to %s: %w", s.cfg.Topic, err), s.closeClient(kc))
	}
	if s.cfg.PruneInterval > 0 && s.cfg.Horizon > 0 {
		go s.pruneEvery(work, s.cfg.PruneInterval)
	}
	s.cfg.Logger.Info("consuming credits", "topic", s.cfg.Topic, "group", s.cfg.Kafka["group.id"], "horizon", s.cfg.Horizon)
	pollMs := max(int(s.cfg.PollTimeout/time.Millisecond), 1)
	for {
		switch {
		case s.aborted():
			return errors.Join(ErrAborted, s.closeClient(kc))
		case s.fatal != nil:
			return s.shutdown(kc, s.fatal)
		case ctx.Err() != nil:
			return s.shutdown(kc, nil)
		}
		s.dispatch(kc.Poll(pollMs))
		s.drainReports()
		s.resendDue()
		if s.cfg.CommitInterval == EveryMessage || time.Since(s.lastCommit) >= s.cfg.CommitInterval {
			s.commit(kc, s.tracker.Commits())
		}
	}
}

func (s *Service) dispatch(ev kafka.Event) {
	switch e := ev.(type) {
	case nil:
	case *kafka.Message:
		if e.TopicPartition.Error != nil {
			s.cfg.Logger.Warn("consume error", "partition", e.TopicPartition.String(), "error", e.TopicPartition.Error)
			return
		}
		s.handle(e)
	case kafka.Error:
		if e.IsFatal() {
			s.fatal = fmt.Errorf("service: fatal Kafka client error: %w", e)
			return
		}
		s.cfg.Logger.Warn("Kafka client error", "error", e, "code", e.Code().String())
	}
}

// commit commits cs, unless the service was aborted. Partitions the broker refused stay
// pending and are reported again by the tracker.
func (s *Service) commit(kc *kafka.Consumer, cs []ledger.Commit) {
	s.lastCommit = time.Now()
	if len(cs) == 0 || s.aborted() {
		return
	}
	offsets := make([]kafka.TopicPartition, len(cs))
	for i, c := range cs {
		topic := c.Topic
		offsets[i] = kafka.TopicPartition{Topic: &topic, Partition: c.Partition, Offset: kafka.Offset(c.Offset)}
	}
	res, err := kc.CommitOffsets(offsets)
	if err != nil {
		s.cfg.Logger.Warn("offset commit failed; the durable prefix is committed again later", "commits", cs, "error", err)
		return
	}
	failed := map[ledger.TopicPartition]bool{}
	for _, tp := range res {
		if tp.Error != nil && tp.Topic != nil {
			s.cfg.Logger.Warn("offset commit refused for a partition", "partition", tp.String(), "error", tp.Error)
			failed[ledger.TopicPartition{Topic: *tp.Topic, Partition: tp.Partition}] = true
		}
	}
	done := make([]ledger.Commit, 0, len(cs))
	for _, c := range cs {
		if !failed[c.TopicPartition] {
			done = append(done, c)
		}
	}
	s.tracker.MarkCommitted(done...)
	s.counts.commits.Add(1)
	if h := s.cfg.Hooks.Committed; h != nil && len(done) > 0 {
		h(done)
	}
}

// shutdown is the graceful end of Run, also after a fatal error: what is durable is
// committed, never more.
func (s *Service) shutdown(kc *kafka.Consumer, cause error) error {
	ctx, cancel := context.WithTimeout(s.work, s.cfg.ShutdownTimeout)
	defer cancel()
	s.waitDeadLetters(ctx)
	s.commit(kc, s.tracker.Commits())
	err := errors.Join(cause, s.closeClient(kc))
	if s.aborted() {
		err = errors.Join(ErrAborted, err)
	}
	if err == nil {
		s.cfg.Logger.Info("stopped", "applied", s.counts.applied.Load(), "duplicates", s.counts.duplicate.Load(), "dead_lettered", s.counts.deadLettered.Load())
	}
	return err
}

// closeClient closes the client on a goroutine of its own, so that a Close that hangs costs
// at most CloseTimeout. The rebalance callback does nothing from now on: the client revokes
// by default, and nothing more is committed.
func (s *Service) closeClient(kc *kafka.Consumer) error {
	s.closing.Store(true)
	done := make(chan error, 1)
	go func() { done <- kc.Close() }()
	t := time.NewTimer(s.cfg.CloseTimeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return fmt.Errorf("service: Kafka client did not close within %v", s.cfg.CloseTimeout)
	}
}

// rebalance is the callback of SubscribeTopics; it runs inside Poll, on the loop goroutine.
func (s *Service) rebalance(kc *kafka.Consumer, ev kafka.Event) error {
	if s.closing.Load() {
		return nil
	}
	cooperative := kc.GetRebalanceProtocol() == "COOPERATIVE"
	switch e := ev.(type) {
	case kafka.AssignedPartitions:
		for _, tp := range e.Partitions {
			ltp := ledger.TopicPartition{Topic: *tp.Topic, Partition: tp.Partition}
			// The ledger starts empty; the client resumes at the committed offset, and the
			// first commit is one past the first credit decided.
			led, err := s.tracker.Assign(ltp, -1)
			if err != nil {
				s.fatal = fmt.Errorf("service: assign %s: %w", ltp, err)
				return err
			}
			s.epoch++
			s.parts[ltp] = &part{led: led, epoch: s.epoch}
		}
		var err error
		if cooperative {
			err = kc.IncrementalAssign(e.Partitions)
		} else {
			err = kc.Assign(e.Partitions)
		}
		if err != nil {
			s.fatal = fmt.Errorf("service: assign: %w", err)
			return err
		}
		s.cfg.Logger.Info("partitions assigned", "partitions", fmt.Sprint(e.Partitions))
	case kafka.RevokedPartitions:
		s.drainReports()
		lost := kc.AssignmentLost()
		var final []ledger.Commit
		for _, tp := range e.Partitions {
			ltp := ledger.TopicPartition{Topic: *tp.Topic, Partition: tp.Partition}
			if s.parts[ltp] == nil {
				continue
			}
			delete(s.parts, ltp)
			if lost {
				// Another consumer may own it already: committing now could move its offset.
				s.tracker.Drop(ltp)
				continue
			}
			c, ok, err := s.tracker.Revoke(ltp)
			if err != nil {
				s.cfg.Logger.Warn("revoke", "partition", ltp.String(), "error", err)
			}
			if ok {
				final = append(final, c)
			}
		}
		s.commit(kc, final)
		var err error
		if cooperative {
			err = kc.IncrementalUnassign(e.Partitions)
		} else {
			err = kc.Unassign()
		}
		if err != nil {
			s.cfg.Logger.Warn("unassign failed", "error", err)
		}
		s.cfg.Logger.Info("partitions revoked", "partitions", fmt.Sprint(e.Partitions), "lost", lost)
	}
	return nil
}

func (s *Service) pruneEvery(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := s.effects.Prune(ctx)
		if err != nil {
			s.cfg.Logger.Warn("pruning markers failed", "error", err)
			continue
		}
		s.cfg.Logger.Info("markers pruned", "deleted", n, "horizon", s.cfg.Horizon)
	}
}
