package dlqkafka

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/internal/configtest"
)

// unreachable is a Kafka configuration whose clients are made but never reach a broker: the
// configuration tests need the client's settings, not a cluster.
func unreachable() kafka.ConfigMap { return kafka.ConfigMap{"bootstrap.servers": "127.0.0.1:1"} }

// Every signed numeric field of Config at -1: NewProducer refuses it, naming the field, or
// the field's documented meaning of a negative value holds.
func TestConfigNegativeValues(t *testing.T) {
	build := func(cfg Config) error {
		p, err := NewProducer(cfg)
		if err == nil {
			t.Cleanup(func() { _ = p.Close(context.Background()) })
		}
		return err
	}
	producer := func(t *testing.T, cfg Config) *Producer {
		p, err := NewProducer(cfg)
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Close(context.Background()) })
		return p
	}
	base := Config{Kafka: unreachable(), ConsumerID: "c1"}
	configtest.Negative(t, base, ErrConfig, build, []configtest.Case[Config]{
		{Field: "ReplicationFactor", Refused: true},
		{Field: "MaxAttempts", Accepted: func(t *testing.T, cfg Config) {
			assert.Equal(t, 1, producer(t, cfg).s.maxAttempts, "one attempt, no retries")
		}},
		{Field: "RetryBackoff", Accepted: func(t *testing.T, cfg Config) {
			assert.Zero(t, producer(t, cfg).s.backoff, "no wait")
		}},
		{Field: "MetadataTimeout", Refused: true},
		{Field: "MaxErrorMessage", Accepted: func(t *testing.T, cfg Config) {
			long := strings.Repeat("x", 10_000)
			letter := producer(t, cfg).letter(dlq.Record{Topic: "t"}, errors.New(long))
			assert.Equal(t, long, letter.ErrorMessage, "no bound")
		}},
	})
}

// Every signed numeric field of ReplayConfig, its Policy's included, at -1: Replay refuses it,
// naming the field, or the field's documented meaning of a negative value holds.
func TestReplayConfigNegativeValues(t *testing.T) {
	build := func(cfg ReplayConfig) error {
		_, err := cfg.withDefaults()
		return err
	}
	resolved := func(t *testing.T, cfg ReplayConfig) ReplayConfig {
		r, err := cfg.withDefaults()
		require.NoError(t, err)
		return r
	}
	base := ReplayConfig{Kafka: unreachable(), Topic: "dlq.t"}
	configtest.Negative(t, base, ErrConfig, build, []configtest.Case[ReplayConfig]{
		{Field: "MaxAttempts", Accepted: func(t *testing.T, cfg ReplayConfig) {
			assert.Equal(t, 1, resolved(t, cfg).MaxAttempts, "one attempt, no retries")
		}},
		{Field: "RetryBackoff", Accepted: func(t *testing.T, cfg ReplayConfig) {
			assert.Zero(t, resolved(t, cfg).RetryBackoff, "no wait")
		}},
		{Field: "MetadataTimeout", Refused: true},
		{Field: "CommitInterval", Refused: true},
		{Field: "MaxInFlight", Refused: true},
		{Field: "ShutdownTimeout", Refused: true},
		{Field: "Policy.MaxReplays", Refused: true},
		{Field: "Policy.Limit", Refused: true},
	})
}
