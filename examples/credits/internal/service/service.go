package service

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/streamledger/streamledger/examples/credits/internal/accounts"
	"github.com/streamledger/streamledger/internal/faults"
	"github.com/streamledger/streamledger/ledger/consumer"
)

// noKey is the window key type of a consumer that has no windows.
type noKey struct{}

// Service consumes credits and applies each once through the effect sink. Create one with
// [New]; [Service.Run] runs one consumer, once.
type Service struct {
	cfg          Config
	store        accounts.Store
	c            *consumer.Consumer[noKey]
	everyMessage bool // a tick after every decision and delivery report

	decisions          decisions
	applied, duplicate atomic.Int64
}

// Counters are running totals of decisions and commits.
type Counters struct {
	Applied, Duplicate, DeadLettered int64
	// Commits counts offset commits the broker accepted.
	Commits int64
}

// New validates cfg and returns a Service. It touches neither Kafka nor the database.
func New(cfg Config) (*Service, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	st, err := newStore(cfg)
	if err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	s := &Service{cfg: cfg, store: st}
	rc := consumer.Config[noKey]{
		Kafka:           cfg.Kafka,
		Topics:          map[string]consumer.Handler[noKey]{cfg.Topic: handle},
		ApplyEffects:    s.applyBatch,
		EffectBatch:     cfg.Batch,
		Workers:         cfg.Workers,
		DeadLetters:     cfg.DeadLetters,
		IdleTimeout:     -1, // no windows, no event time
		FlushInterval:   cfg.CommitInterval,
		ShutdownTimeout: cfg.ShutdownTimeout,
		Logger:          cfg.Logger,
		Hooks:           []consumer.Hook{observer{s}},
	}
	if cfg.CommitInterval == EveryMessage {
		s.everyMessage = true
		rc.FlushInterval = -1 // ticks on request (observer.tick)
	}
	if s.c, err = consumer.New(rc); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return s, nil
}

// newStore returns the accounts store on the database cfg names.
func newStore(cfg Config) (accounts.Store, error) {
	ac := accounts.Config{
		Schema: cfg.Schema, Markers: cfg.Markers, Clock: cfg.Clock,
		Horizon: cfg.Horizon, SourceRetention: cfg.SourceRetention, Retry: cfg.Retry, Rand: cfg.Rand,
	}
	if cfg.MySQL != nil {
		return accounts.NewMySQL(cfg.MySQL, ac)
	}
	return accounts.NewPostgres(cfg.Pool, ac)
}

// Migrate creates the accounts, entries and marker tables if they do not exist.
func (s *Service) Migrate(ctx context.Context) error { return s.store.Migrate(ctx) }

// Store returns the accounts store the service credits.
func (s *Service) Store() accounts.Store { return s.store }

// Prune deletes the markers older than the horizon and returns how many it deleted.
func (s *Service) Prune(ctx context.Context) (int64, error) { return s.store.Prune(ctx) }

// Counters returns the running totals; safe from any goroutine.
func (s *Service) Counters() Counters {
	c := s.c.Counters()
	return Counters{
		Applied: s.applied.Load(), Duplicate: s.duplicate.Load(),
		DeadLettered: c.DeadLettered, Commits: c.Commits,
	}
}

// Abort stops the consumer where it is, as a crash would: no further transaction, commit or
// dead letter is started, a transaction in progress is abandoned (rolled back unless it
// already committed), and Run closes the client and returns [ErrAborted]. What was not
// committed is redelivered to the next consumer of the group. Safe from any goroutine, more
// than once.
func (s *Service) Abort() { s.c.Abort() }

// Run consumes credits until ctx is cancelled, then shuts down gracefully: it waits (up to
// ShutdownTimeout) for the delivery reports of dead letters in flight, commits the durable
// prefix of every partition, and closes the client. It returns nil after a graceful
// shutdown; an error wrapping consumer.ErrEffect and the cause after a failure that is not a
// credit's (a database that stays unreachable after the sink's retries), once what is durable
// is committed; another error of the runtime (a fatal client error); or [ErrAborted] after
// [Service.Abort]. A restart resumes at the first credit not committed.
func (s *Service) Run(ctx context.Context) error {
	if s.cfg.SinkFaults != nil {
		ctx = faults.With(ctx, s.cfg.SinkFaults)
	}
	var wg sync.WaitGroup
	pctx, stopPruning := context.WithCancel(context.WithoutCancel(ctx))
	defer func() {
		stopPruning()
		wg.Wait()
	}()
	if s.cfg.PruneInterval > 0 && s.cfg.Horizon > 0 {
		wg.Go(func() { every(pctx, s.cfg.PruneInterval, func() { s.prune(pctx) }) })
	}
	if s.everyMessage {
		// The runtime applies delivery reports at ticks: tick often enough to commit past a
		// confirmed dead letter, and to send a refused one again, without a decision.
		wg.Go(func() { every(pctx, reportEvery, observer{s}.tick) })
	}
	s.cfg.Logger.Info("consuming credits", "topic", s.cfg.Topic, "group", s.cfg.Kafka["group.id"], "horizon", s.cfg.Horizon)
	err := s.c.Run(ctx)
	if err == nil {
		s.cfg.Logger.Info("stopped", "applied", s.applied.Load(), "duplicates", s.duplicate.Load(),
			"dead_lettered", s.c.Counters().DeadLettered)
	}
	return err
}

// reportEvery is how often an EveryMessage service ticks without a decision.
const reportEvery = 20 * time.Millisecond

// every calls f every d until ctx is done.
func every(ctx context.Context, d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// prune deletes the markers past the horizon, for the pruning loop.
func (s *Service) prune(ctx context.Context) {
	n, err := s.store.Prune(ctx)
	if err != nil {
		s.cfg.Logger.Warn("pruning markers failed", "error", err)
		return
	}
	s.cfg.Logger.Info("markers pruned", "deleted", n, "horizon", s.cfg.Horizon)
}

// delivery describes m for the hooks.
func delivery(m *kafka.Message) Delivery {
	d := Delivery{Offset: int64(m.TopicPartition.Offset)}
	d.Partition = m.TopicPartition.Partition
	if m.TopicPartition.Topic != nil {
		d.Topic = *m.TopicPartition.Topic
	}
	if m.TimestampType != kafka.TimestampNotAvailable {
		d.Timestamp = m.Timestamp
	}
	return d
}
