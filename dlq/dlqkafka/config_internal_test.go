package dlqkafka

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/internal/configtest"
	"github.com/streamledger/streamledger/internal/retry"
	"github.com/streamledger/streamledger/sink"
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
		{Field: "Retry.MaxAttempts", Accepted: func(t *testing.T, cfg Config) {
			assert.Equal(t, 1, producer(t, cfg).s.retry.MaxAttempts, "one attempt, no retries")
		}},
		{Field: "Retry.InitialBackoff", Accepted: func(t *testing.T, cfg Config) {
			assert.Zero(t, retry.Backoff(producer(t, cfg).s.retry, 1), "no wait")
		}},
		{Field: "Retry.MaxBackoff", Accepted: func(t *testing.T, cfg Config) {
			assert.Equal(t, 800*time.Millisecond, retry.Backoff(producer(t, cfg).s.retry, 5), "doubling without a bound")
		}},
		{Field: "MetadataTimeout", Refused: true},
		{Field: "MaxErrorMessage", Accepted: func(t *testing.T, cfg Config) {
			long := strings.Repeat("x", 10_000)
			letter := producer(t, cfg).letter(dlq.Record{Topic: "t"}, errors.New(long))
			assert.Equal(t, long, letter.ErrorMessage, "no bound")
		}},
	})
}

// The zero retry policy is the one every package that retries shares: 5 attempts, waiting
// 50 ms before the second and doubling up to 2 s.
func TestRetryDefaults(t *testing.T) {
	p, err := NewProducer(Config{Kafka: unreachable(), ConsumerID: "c1"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	r, err := ReplayConfig{Kafka: unreachable(), Topic: "dlq.t"}.withDefaults()
	require.NoError(t, err)
	want := sink.RetryPolicy{MaxAttempts: 5, InitialBackoff: 50 * time.Millisecond, MaxBackoff: 2 * time.Second}
	assert.Equal(t, want, p.s.retry, "Config")
	assert.Equal(t, want, r.Retry, "ReplayConfig")
	set := sink.RetryPolicy{MaxAttempts: 2, InitialBackoff: time.Second, MaxBackoff: time.Second}
	r, err = ReplayConfig{Kafka: unreachable(), Topic: "dlq.t", Retry: set}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, set, r.Retry, "a set policy is kept")
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
		{Field: "Retry.MaxAttempts", Accepted: func(t *testing.T, cfg ReplayConfig) {
			assert.Equal(t, 1, resolved(t, cfg).Retry.MaxAttempts, "one attempt, no retries")
		}},
		{Field: "Retry.InitialBackoff", Accepted: func(t *testing.T, cfg ReplayConfig) {
			assert.Zero(t, retry.Backoff(resolved(t, cfg).Retry, 1), "no wait")
		}},
		{Field: "Retry.MaxBackoff", Accepted: func(t *testing.T, cfg ReplayConfig) {
			assert.Equal(t, 800*time.Millisecond, retry.Backoff(resolved(t, cfg).Retry, 5), "doubling without a bound")
		}},
		{Field: "MetadataTimeout", Refused: true},
		{Field: "CommitInterval", Refused: true},
		{Field: "MaxInFlight", Refused: true},
		{Field: "ShutdownTimeout", Refused: true},
		{Field: "Policy.MaxReplays", Refused: true},
		{Field: "Policy.Limit", Refused: true},
	})
}
