package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/streamledger/streamledger/dlq/dlqkafka"
	"github.com/streamledger/streamledger/examples/ov/event"
	"github.com/streamledger/streamledger/examples/ov/tables"
	"github.com/streamledger/streamledger/ledger/consumer"
	"github.com/streamledger/streamledger/ledger/consumer/prom"
	"github.com/streamledger/streamledger/sink"
)

// Defaults of the zero Config fields.
const (
	DefaultGroup            = "ov-processor"
	DefaultPositionsTopic   = event.DefaultPositionsTopic
	DefaultPredictionsTopic = event.DefaultPredictionsTopic
	DefaultProcessorID      = "ov-processor"
	// DefaultShutdownTimeout is the consumer's: it bounds the consumer's shutdown and then
	// the dead-letter producer's close.
	DefaultShutdownTimeout = 30 * time.Second
)

// Config configures a Pipeline. Brokers is required; the zero value of every other field is
// documented.
type Config struct {
	// Brokers is the bootstrap server list (host:port, comma separated).
	Brokers string
	// Group is the consumer group [DefaultGroup].
	Group string
	// PositionsTopic and PredictionsTopic are the source topics [DefaultPositionsTopic],
	// [DefaultPredictionsTopic]. Their dead letters go to dlq.<topic>.
	PositionsTopic, PredictionsTopic string
	// Migrate creates or upgrades the tables before consuming.
	Migrate bool
	// WindowSize, Lateness, IdleTimeout and FlushInterval are the runtime's (5 min, 120 s,
	// 30 s, 5 s when zero); a negative IdleTimeout means partitions never go idle.
	WindowSize, Lateness, IdleTimeout, FlushInterval time.Duration
	// FlushWhenCaughtUp runs a tick early when the consumer has caught up (see
	// consumer.Config), so that a burst's last windows and positions are written without
	// waiting for the next FlushInterval. Zero means a fifth of FlushInterval; negative means
	// never.
	FlushWhenCaughtUp time.Duration
	// WriteTimeout bounds the sink writes of one tick (see consumer.Config; 30 s when zero). It
	// must stay under half of max.poll.interval.ms when Kafka sets that.
	WriteTimeout time.Duration
	// SyncWrites makes each tick write while the loop waits (see consumer.Config).
	SyncWrites bool
	// WriteConcurrency is how many of a tick's writes run at once (see consumer.Config; 2
	// when zero).
	WriteConcurrency int
	// ShutdownTimeout bounds the consumer's graceful shutdown, closing the Kafka consumer
	// included (see consumer.Config), and then the dead-letter producer's close: with the
	// brokers down a stop takes up to twice ShutdownTimeout [DefaultShutdownTimeout].
	ShutdownTimeout time.Duration
	// Decoder bounds what a message may hold (the Netherlands, 6 h of delay, by default).
	Decoder event.Config
	// ProcessorID names this instance in its dead letters and as the Kafka client.id
	// [DefaultProcessorID].
	ProcessorID string
	// CreateDLQTopics lets the dead-letter producer create a missing dlq.<topic> with the
	// source's partition count. When false a missing one stops the processor with an error
	// naming the topic to create.
	CreateDLQTopics bool
	// Kafka holds extra librdkafka settings (TLS, SASL, log levels) for both the consumer
	// and the dead-letter producer.
	Kafka kafka.ConfigMap
	// Until makes the run bounded: it stops each partition there, closes its windows and
	// returns once everything is written and committed (see consumer.Config.Until). The zero
	// value runs until the context is cancelled.
	Until consumer.Until
	// BufferLimit bounds the bytes the runtime holds (see consumer.Config.BufferLimit). Zero
	// means consumer.DefaultBufferLimit; negative means no bound.
	BufferLimit int64
	// LostRecords is what the consumer does with records deleted before it read them (see
	// consumer.Config.LostRecords); the zero value stops it. Their ranges go to the
	// dead-letter topics as letters of class dlq.ClassLost.
	LostRecords consumer.LostPolicy
	// Clock, Logger and Hooks pass through to the runtime (see consumer.Config); Clock
	// also stamps computed_at and updated_at.
	Clock  func() time.Time
	Logger *slog.Logger
	Hooks  []consumer.Hook
	// Metrics, if set, receives the metrics of the consumer, the sink and the dead-letter
	// producer.
	Metrics *prom.Metrics
	// WrapHandler, if set, wraps the handler of each topic, for instrumentation (the bench
	// command times decoding with it). Nil means the handlers run as they are.
	WrapHandler func(topic string, h consumer.Handler[tables.Key]) consumer.Handler[tables.Key]
}

func (c Config) withDefaults() Config {
	if c.Group == "" {
		c.Group = DefaultGroup
	}
	if c.PositionsTopic == "" {
		c.PositionsTopic = DefaultPositionsTopic
	}
	if c.PredictionsTopic == "" {
		c.PredictionsTopic = DefaultPredictionsTopic
	}
	if c.ProcessorID == "" {
		c.ProcessorID = DefaultProcessorID
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Pipeline is a configured OV processor.
type Pipeline struct {
	cfg  Config
	cons *consumer.Consumer[tables.Key]
	dlq  *dlqkafka.Producer
	sink Store
}

// New builds the processor writing to db: it opens its sink, migrates the tables when
// cfg.Migrate is set, and starts the dead-letter producer. It does not consume: Run does.
func New(ctx context.Context, cfg Config, db Database) (*Pipeline, error) {
	cfg = cfg.withDefaults()
	if cfg.Brokers == "" {
		return nil, errors.New("pipeline: no brokers given")
	}
	dec, err := event.NewDecoder(cfg.Decoder)
	if err != nil {
		return nil, err
	}
	hooks := cfg.Hooks
	var sinkHooks []sink.Hook
	if m := cfg.Metrics; m != nil {
		sinkHooks, hooks = []sink.Hook{m}, append([]consumer.Hook{m}, hooks...)
	}
	snk, err := db(cfg.Clock, sinkHooks)
	if err != nil {
		return nil, err
	}
	if cfg.Migrate {
		if err := snk.Migrate(ctx); err != nil {
			return nil, fmt.Errorf("pipeline: migrating the tables: %w", err)
		}
	}
	common := kafka.ConfigMap{"bootstrap.servers": cfg.Brokers, "client.id": cfg.ProcessorID}
	for k, v := range cfg.Kafka {
		common[k] = v
	}
	dlqProducer, err := newDeadLetters(cfg, common)
	if err != nil {
		return nil, err
	}
	consCfg := kafka.ConfigMap{"group.id": cfg.Group, "auto.offset.reset": "earliest"}
	for k, v := range common {
		consCfg[k] = v
	}
	handlers := Handlers(cfg.PositionsTopic, cfg.PredictionsTopic, dec)
	if cfg.WrapHandler != nil {
		for t, h := range handlers {
			handlers[t] = cfg.WrapHandler(t, h)
		}
	}
	cons, err := consumer.New(consumer.Config[tables.Key]{
		Kafka:             consCfg,
		Topics:            handlers,
		Sink:              snk,
		Series:            NewSeries(),
		RetainKey:         tables.Retain,
		DeadLetters:       dlqProducer,
		WindowSize:        cfg.WindowSize,
		Lateness:          cfg.Lateness,
		IdleTimeout:       cfg.IdleTimeout,
		FlushInterval:     cfg.FlushInterval,
		FlushWhenCaughtUp: cfg.FlushWhenCaughtUp,
		WriteTimeout:      cfg.WriteTimeout,
		SyncWrites:        cfg.SyncWrites,
		WriteConcurrency:  cfg.WriteConcurrency,
		ShutdownTimeout:   cfg.ShutdownTimeout,
		BufferLimit:       cfg.BufferLimit,
		LostRecords:       cfg.LostRecords,
		Until:             cfg.Until,
		Clock:             cfg.Clock,
		Logger:            cfg.Logger,
		Hooks:             hooks,
	})
	if err != nil {
		closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = dlqProducer.Close(closeCtx)
		return nil, err
	}
	return &Pipeline{cfg: cfg, cons: cons, dlq: dlqProducer, sink: snk}, nil
}

// newDeadLetters starts the dead-letter producer with the common Kafka settings.
func newDeadLetters(cfg Config, common kafka.ConfigMap) (*dlqkafka.Producer, error) {
	prodCfg := kafka.ConfigMap{}
	for k, v := range common {
		prodCfg[k] = v
	}
	var hooks []dlqkafka.Hook
	if cfg.Metrics != nil {
		hooks = []dlqkafka.Hook{cfg.Metrics}
	}
	p, err := dlqkafka.NewProducer(dlqkafka.Config{
		Kafka:        prodCfg,
		ConsumerID:   cfg.ProcessorID,
		CreateTopics: cfg.CreateDLQTopics,
		Clock:        cfg.Clock,
		OnError: func(err error) {
			cfg.Logger.Warn("dead-letter producer", "error", err)
		},
		Hooks: hooks,
	})
	if err != nil {
		return nil, fmt.Errorf("pipeline: dead-letter producer: %w", err)
	}
	return p, nil
}

// Run consumes until ctx is cancelled (or, with Until, until every partition is written and
// committed through its stop), then shuts down gracefully (see consumer.Consumer.Run) and
// closes the dead-letter producer within ShutdownTimeout: the consumer has already waited for
// the reports of the letters it sent, so what is left is flushing letters whose offsets were
// not committed past. It may be called once.
func (p *Pipeline) Run(ctx context.Context) error {
	err := p.cons.Run(ctx)
	closeCtx, cancel := context.WithTimeout(context.Background(), p.cfg.ShutdownTimeout)
	defer cancel()
	if cerr := p.dlq.Close(closeCtx); cerr != nil {
		err = errors.Join(err, fmt.Errorf("pipeline: closing the dead-letter producer: %w", cerr))
	}
	return err
}

// Abort abandons the graceful shutdown (see consumer.Consumer.Abort).
func (p *Pipeline) Abort() { p.cons.Abort() }

// Health returns the runtime's liveness (see consumer.Consumer.Health).
func (p *Pipeline) Health() consumer.Health { return p.cons.Health() }

// Counters returns the runtime's totals.
func (p *Pipeline) Counters() consumer.Counters { return p.cons.Counters() }

// Sink returns the sink, for reading results back.
func (p *Pipeline) Sink() Store { return p.sink }

// Config returns the configuration with defaults applied.
func (p *Pipeline) Config() Config { return p.cfg }

// Handlers returns the decoders of the two topics as runtime handlers. They are pure functions
// of the message, as the runtime requires.
//
// Each event's slices (its state row, the row's key and values; its window value and keys)
// live in one allocation for what the runtime keeps until the flush and one for what it drops
// once applied (positionEvent; predictionState, predictionWindow), so that a handler allocates
// a few times per message rather than once per slice. What still allocates is the decoded
// text (once) and the boxing of each state value into an any, which the sink's StateRow
// requires.
func Handlers(positionsTopic, predictionsTopic string, d *event.Decoder) map[string]consumer.Handler[tables.Key] {
	return map[string]consumer.Handler[tables.Key]{
		positionsTopic: func(m *kafka.Message) (consumer.Event[tables.Key], error) {
			p, err := d.DecodePosition(m.Value, brokerTime(m))
			if err != nil {
				return consumer.Event[tables.Key]{}, err
			}
			b := new(positionEvent)
			b.state[0] = b.row.Row(p)
			return consumer.Event[tables.Key]{Time: p.ObservedAt, State: b.state[:]}, nil
		},
		predictionsTopic: func(m *kafka.Message) (consumer.Event[tables.Key], error) {
			p, err := d.DecodePrediction(m.Value, brokerTime(m))
			if err != nil {
				return consumer.Event[tables.Key]{}, err
			}
			// Two allocations, not one: the window keys are garbage once applied, while the
			// state row stays buffered until the next flush; one block would keep both.
			w := new(predictionWindow)
			w.keys = tables.KeysOf(p)
			w.values[0] = consumer.Value[tables.Key]{Value: float64(p.DelayS), Keys: w.keys[:]}
			b := new(predictionState)
			b.state[0] = b.row.Row(p)
			return consumer.Event[tables.Key]{Time: p.ObservedAt, Values: w.values[:], State: b.state[:]}, nil
		},
	}
}

// positionEvent is the storage of a position's event. The runtime keeps the state row (and so
// this) until the next state flush; nothing is reused.
type positionEvent struct {
	state [1]sink.StateRow
	row   tables.VehicleRowBuf
}

// predictionWindow is the storage of a prediction's window value and keys.
type predictionWindow struct {
	values [1]consumer.Value[tables.Key]
	keys   [4]tables.Key
}

// predictionState is the storage of a prediction's state row, kept until the next flush.
type predictionState struct {
	state [1]sink.StateRow
	row   tables.TripRowBuf
}

// brokerTime is the message's Kafka timestamp, zero when the broker gave none (the decoder
// then skips the checks against it).
func brokerTime(m *kafka.Message) time.Time {
	if m.TimestampType == kafka.TimestampNotAvailable {
		return time.Time{}
	}
	return m.Timestamp
}

// maxSharedAttrs bounds the operators whose Attrs map NewSeries keeps, so that a feed of
// ever new operator codes cannot grow it without end; past it, each series gets its own.
const maxSharedAttrs = 1024

// NewSeries returns the consumer.Config.Series of one consumer: a window key's series in
// delay_aggregates, with the operator column when the key has one. Series of one operator
// share one Attrs map (the consumer and the sinks only read it), where a map per series would
// cost one per closed (window, key). It is safe for concurrent use.
func NewSeries() func(tables.Key) sink.Series {
	var (
		mu    sync.Mutex
		attrs = map[string]map[string]string{}
	)
	return func(k tables.Key) sink.Series {
		sk := sink.Series{Dimension: k.Dimension, DimensionID: k.ID}
		if k.Operator == "" {
			return sk
		}
		mu.Lock()
		defer mu.Unlock()
		m, ok := attrs[k.Operator]
		if !ok {
			m = map[string]string{tables.OperatorAttr: k.Operator}
			if len(attrs) < maxSharedAttrs {
				attrs[k.Operator] = m
			}
		}
		sk.Attrs = m
		return sk
	}
}
