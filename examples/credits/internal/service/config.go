package service

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/dlq/dlqkafka"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/postgres"
)

// Defaults for the zero values of [Config].
const (
	DefaultTopic             = "credits"
	DefaultCommitInterval    = time.Second
	DefaultPollTimeout       = 100 * time.Millisecond
	DefaultPruneInterval     = time.Hour
	DefaultDeadLetterBackoff = time.Second
	DefaultShutdownTimeout   = 10 * time.Second
	DefaultCloseTimeout      = 10 * time.Second
)

// EveryMessage as [Config.CommitInterval] commits after every decided message: one commit
// request per credit, for tests and demonstrations that need to know exactly which offsets
// are committed when.
const EveryMessage time.Duration = -1

// Forever as [Config.SourceRetention] declares a source that keeps records forever
// (retention.ms = -1): only a zero [Config.Horizon], markers kept forever, is accepted then.
const Forever time.Duration = -1

// DeadLetterSender sends a message that failed to its dead-letter topic and reports its
// delivery once through done; [*dlqkafka.Producer] is one.
type DeadLetterSender interface {
	Send(ctx context.Context, rec dlq.Record, cause error, done func(dlqkafka.Delivery)) error
}

// Config configures a [Service]. Kafka, Pool and DeadLetters are required; every other zero
// value takes the documented default.
type Config struct {
	// Kafka configures the consumer: bootstrap.servers and group.id are required, anything
	// else (TLS, SASL, client.id, the assignor, timeouts) passes through. The service sets
	// enable.auto.commit=false and enable.auto.offset.store=false, and a true for either is an
	// error ([ErrConfig]): it commits only what the ledger says is durable. auto.offset.reset
	// defaults to earliest: a new group starts with the oldest credit the topic still holds.
	Kafka kafka.ConfigMap
	// Topic carries the credits [DefaultTopic].
	Topic string

	// Pool reaches the database holding the accounts and the markers.
	Pool *pgxpool.Pool
	// Schema holds the tables [public].
	Schema string
	// Markers names the effect sink's marker table [streamledger_markers].
	Markers string
	// Horizon is how long a marker is kept after its credit was applied; zero keeps markers
	// forever. A credit older than the horizon (by its record timestamp) that finds no marker
	// is refused and dead-lettered ([ClassBeyondHorizon]): its marker may have been pruned.
	Horizon time.Duration
	// SourceRetention is how far back the topic can redeliver (its retention.ms, see
	// [TopicRetention]); [Forever] for a topic that keeps records forever. A non-zero Horizon
	// shorter than it is refused with an error wrapping [sink.ErrHorizon]. Zero declares
	// nothing.
	SourceRetention time.Duration
	// Retry bounds the sink's retries of transient database failures.
	Retry sink.RetryPolicy
	// SinkHooks are passed to the effect sink (fault injection in tests).
	SinkHooks postgres.Hooks

	// DeadLetters receives the credits that cannot be applied.
	DeadLetters DeadLetterSender

	// Clock stamps markers and entries, places the pruning horizon and judges a credit's age
	// [time.Now].
	Clock func() time.Time
	// Rand provides the effect sink's attempt tokens [crypto/rand.Reader].
	Rand io.Reader

	// CommitInterval is how often the durable prefix is committed [DefaultCommitInterval];
	// [EveryMessage] commits after every decided message. Revocations and shutdowns commit too.
	CommitInterval time.Duration
	// PollTimeout bounds one wait for a message [DefaultPollTimeout].
	PollTimeout time.Duration
	// PruneInterval is how often markers older than the horizon are pruned while running
	// [DefaultPruneInterval]; negative never prunes (call [Service.Prune] yourself).
	PruneInterval time.Duration
	// DeadLetterBackoff is the wait before a dead letter that was not delivered is sent again
	// [DefaultDeadLetterBackoff]. It is sent again until it is delivered: its offset, and every
	// later one of its partition, stay uncommitted until then.
	DeadLetterBackoff time.Duration
	// ShutdownTimeout bounds the wait for dead-letter deliveries in a graceful shutdown
	// [DefaultShutdownTimeout].
	ShutdownTimeout time.Duration
	// CloseTimeout bounds the close of the Kafka client [DefaultCloseTimeout].
	CloseTimeout time.Duration

	// Logger receives the service's logs [slog.Default].
	Logger *slog.Logger
	// Hooks observe the service and let tests stop it at its crash points.
	Hooks Hooks
}

func (cfg Config) withDefaults() (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		return Config{}, fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	km, err := kafkaConfig(cfg.Kafka)
	if err != nil {
		return Config{}, err
	}
	cfg.Kafka = km
	if cfg.Topic == "" {
		cfg.Topic = DefaultTopic
	}
	if cfg.Pool == nil {
		return bad("Pool is required")
	}
	if cfg.DeadLetters == nil {
		return bad("DeadLetters is required")
	}
	if cfg.Schema == "" {
		cfg.Schema = "public"
	}
	if cfg.Markers == "" {
		cfg.Markers = "streamledger_markers"
	}
	if cfg.Horizon < 0 {
		return bad("Horizon: expected a duration >= 0 (0: forever), found %v", cfg.Horizon)
	}
	if cfg.SourceRetention < 0 && cfg.SourceRetention != Forever {
		return bad("SourceRetention: expected a duration >= 0 or Forever, found %v", cfg.SourceRetention)
	}
	if cfg.SourceRetention == Forever && cfg.Horizon != 0 {
		return Config{}, fmt.Errorf("%w: horizon %v, source retention forever: keep markers forever (Horizon 0)", sink.ErrHorizon, cfg.Horizon)
	}
	if cfg.CommitInterval < 0 && cfg.CommitInterval != EveryMessage {
		return bad("CommitInterval: expected a positive duration, zero or EveryMessage, found %v", cfg.CommitInterval)
	}
	if cfg.CommitInterval == 0 {
		cfg.CommitInterval = DefaultCommitInterval
	}
	if cfg.PruneInterval == 0 {
		cfg.PruneInterval = DefaultPruneInterval
	}
	for _, d := range []struct {
		name string
		d    *time.Duration
		def  time.Duration
	}{
		{"PollTimeout", &cfg.PollTimeout, DefaultPollTimeout},
		{"DeadLetterBackoff", &cfg.DeadLetterBackoff, DefaultDeadLetterBackoff},
		{"ShutdownTimeout", &cfg.ShutdownTimeout, DefaultShutdownTimeout},
		{"CloseTimeout", &cfg.CloseTimeout, DefaultCloseTimeout},
	} {
		switch {
		case *d.d < 0:
			return bad("%s: expected a positive duration or zero for the default, found %v", d.name, *d.d)
		case *d.d == 0:
			*d.d = d.def
		}
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return cfg, nil
}

// kafkaConfig returns a copy of user with the properties the service depends on, or an error
// naming one that contradicts them.
func kafkaConfig(user kafka.ConfigMap) (kafka.ConfigMap, error) {
	out := make(kafka.ConfigMap, len(user)+3)
	for k, v := range user {
		out[k] = v
	}
	for _, key := range []string{"enable.auto.commit", "enable.auto.offset.store"} {
		if v, ok := user[key]; ok && !isFalse(v) {
			return nil, fmt.Errorf("%w: Kafka: %s must be false, found %v: the service commits only the ledger's durable prefix", ErrConfig, key, v)
		}
		out[key] = false
	}
	if v, ok := user["go.events.channel.enable"]; ok && !isFalse(v) {
		return nil, fmt.Errorf("%w: Kafka: go.events.channel.enable must be false, found %v: the service polls", ErrConfig, v)
	}
	if s, _ := user["group.id"].(string); s == "" {
		return nil, fmt.Errorf("%w: Kafka: group.id is required (a non-empty string), found %v", ErrConfig, user["group.id"])
	}
	_, b1 := user["bootstrap.servers"]
	_, b2 := user["metadata.broker.list"]
	if !b1 && !b2 {
		return nil, fmt.Errorf("%w: Kafka: bootstrap.servers is required", ErrConfig)
	}
	if _, ok := user["auto.offset.reset"]; !ok {
		out["auto.offset.reset"] = "earliest"
	}
	return out, nil
}

func isFalse(v kafka.ConfigValue) bool {
	switch v := v.(type) {
	case bool:
		return !v
	case string:
		b, err := strconv.ParseBool(v)
		return err == nil && !b
	}
	return false
}
