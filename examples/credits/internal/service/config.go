package service

import (
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamledger/streamledger/internal/faults"
	"github.com/streamledger/streamledger/internal/horizon"
	"github.com/streamledger/streamledger/ledger/consumer"
	"github.com/streamledger/streamledger/sink"
)

// Defaults for the zero values of [Config] that the consumer runtime does not set itself.
const (
	DefaultTopic          = "credits"
	DefaultCommitInterval = time.Second
	DefaultPruneInterval  = time.Hour
	// DefaultBatch bounds the credits of one transaction: large batches take fewer
	// transactions and commits per credit, and a partition's batch is only that large when
	// that many credits wait (credits bench measures the rate by batch size).
	DefaultBatch = 4096
)

// EveryMessage as [Config.CommitInterval] commits after every decided message, once the
// partition's messages at hand are decided, and within 20 ms of every dead-letter
// delivery report: commits close behind the decisions, for tests and demonstrations that need
// to know which offsets are committed when.
const EveryMessage time.Duration = -1

// Forever as [Config.SourceRetention] declares a source that keeps records forever
// (retention.ms = -1); as [Config.Horizon] it keeps markers forever, the only horizon such a
// source accepts.
const Forever time.Duration = -1

// Config configures a [Service]. Kafka, Pool or MySQL, and DeadLetters are required; every other
// zero value takes the documented default, in brackets, or the consumer runtime's (package
// ledger/consumer).
type Config struct {
	// Kafka configures the consumer: bootstrap.servers and group.id are required, anything
	// else (TLS, SASL, client.id, the assignor, timeouts) passes through to the runtime, which
	// refuses enable.auto.commit or enable.auto.offset.store set to true. auto.offset.reset
	// defaults to earliest: a new group starts with the oldest credit the topic still holds.
	Kafka kafka.ConfigMap
	// Topic carries the credits [DefaultTopic].
	Topic string

	// Pool reaches the Postgres database holding the accounts and the markers.
	Pool *pgxpool.Pool
	// MySQL reaches the MySQL or MariaDB database holding them, instead of Pool: the
	// tables are in its connections' database.
	MySQL *sql.DB
	// Schema holds the tables on Postgres [public]; empty on MySQL.
	Schema string
	// Markers names the effect sink's marker table [streamledger_markers].
	Markers string
	// Horizon is how long a marker is kept after its credit was applied [7 days]; negative
	// keeps markers forever. A credit older than the horizon (by its record timestamp) that
	// finds no marker is refused and dead-lettered ([ClassBeyondHorizon]): its marker may have
	// been pruned.
	Horizon time.Duration
	// SourceRetention is how far back the topic can redeliver (its retention.ms, see
	// [TopicRetention]); [Forever] (any negative value) for a topic that keeps records
	// forever. A Horizon shorter than it is refused with an error wrapping [sink.ErrHorizon].
	// Zero declares nothing.
	SourceRetention time.Duration
	// Retry bounds the sink's retries of transient database failures.
	Retry sink.RetryPolicy
	// SinkFaults, when set, is armed on every write of the effect sink (fault injection in
	// tests, see package internal/faults).
	SinkFaults faults.Func

	// DeadLetters receives the credits that cannot be applied; *dlqkafka.Producer is one.
	DeadLetters consumer.DeadLetterer

	// Clock stamps markers and entries, places the pruning horizon and judges a credit's age
	// [time.Now]. The consumer runtime keeps the wall clock (dead-letter backoffs).
	Clock func() time.Time
	// Rand provides the effect sink's attempt tokens [crypto/rand.Reader].
	Rand io.Reader

	// Batch bounds the credits applied in one transaction: a partition's credits at hand, in
	// offset order (consumer.Config.EffectBatch) [DefaultBatch]; negative applies each credit
	// alone.
	Batch int
	// Workers is how many partitions' batches are decided and applied at once, on as many
	// connections (consumer.Config.Workers) [runtime.GOMAXPROCS]; negative decides every
	// credit on the polling goroutine, one transaction each.
	Workers int

	// CommitInterval is how often the durable prefix is committed [DefaultCommitInterval];
	// [EveryMessage] commits after every decided message. Revocations and shutdowns commit too.
	CommitInterval time.Duration
	// PruneInterval is how often markers older than the horizon are pruned while running
	// [DefaultPruneInterval]; negative never prunes (call [Service.Prune] yourself).
	PruneInterval time.Duration
	// ShutdownTimeout bounds the graceful shutdown (dead-letter deliveries, the last commit,
	// the close of the Kafka client).
	ShutdownTimeout time.Duration

	// Logger receives the service's logs [slog.Default].
	Logger *slog.Logger
	// Hooks observe the service and let tests stop it at its crash points.
	Hooks Hooks
}

func (cfg Config) withDefaults() (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		return Config{}, fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	if cfg.Kafka == nil {
		return bad("Kafka: a librdkafka configuration with bootstrap.servers and group.id is required")
	}
	cfg.Kafka = maps.Clone(cfg.Kafka)
	if _, ok := cfg.Kafka["auto.offset.reset"]; !ok {
		cfg.Kafka["auto.offset.reset"] = "earliest"
	}
	if cfg.Topic == "" {
		cfg.Topic = DefaultTopic
	}
	if (cfg.Pool == nil) == (cfg.MySQL == nil) {
		return bad("one of Pool (Postgres) and MySQL is required")
	}
	if cfg.MySQL != nil && cfg.Schema != "" {
		return bad("Schema %q: on MySQL the tables are in the connection's database", cfg.Schema)
	}
	if cfg.DeadLetters == nil {
		return bad("DeadLetters is required")
	}
	if cfg.Schema == "" && cfg.Pool != nil {
		cfg.Schema = "public"
	}
	if cfg.Markers == "" {
		cfg.Markers = "streamledger_markers"
	}
	h, err := horizon.Resolve(cfg.Horizon, cfg.SourceRetention, "Horizon", "SourceRetention")
	if err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if cfg.Horizon = h; h == 0 {
		cfg.Horizon = Forever
	}
	if cfg.CommitInterval < 0 && cfg.CommitInterval != EveryMessage {
		return bad("CommitInterval: expected a positive duration, zero or EveryMessage, found %v", cfg.CommitInterval)
	}
	if cfg.CommitInterval == 0 {
		cfg.CommitInterval = DefaultCommitInterval
	}
	if cfg.Batch == 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.PruneInterval == 0 {
		cfg.PruneInterval = DefaultPruneInterval
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return cfg, nil
}
