package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/configtest"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/configcases"
)

// Every signed numeric field of Config at -1: New refuses it, naming the field, or the
// field's documented meaning of a negative value holds. New does not touch the database, so
// a pool that connects nowhere serves.
func TestConfigNegativeValues(t *testing.T) {
	pool := &pgxpool.Pool{}
	built := func(t *testing.T, cfg Config) *Sink {
		s, err := New(pool, cfg)
		require.NoError(t, err)
		return s
	}
	build := func(cfg Config) error {
		_, err := New(pool, cfg)
		return err
	}
	cases := []configtest.Case[Config]{{Field: "Strategy", Refused: true}}
	cases = append(cases, configcases.Aggregates("Aggregates", func(t *testing.T, cfg Config) sink.AggregateSpec {
		agg, _ := built(t, cfg).Tables()
		return agg
	})...)
	cases = append(cases, configcases.Horizon("Horizon", "SourceRetention", func(t *testing.T, cfg Config) {
		_, due := built(t, cfg).pruner.Due(time.Now().Add(100 * 365 * 24 * time.Hour))
		assert.False(t, due, "folded windows are never pruned")
	})...)
	cases = append(cases, configcases.Retry("Retry", func(t *testing.T, cfg Config) sink.RetryPolicy {
		return built(t, cfg).cfg.Retry
	})...)
	configtest.Negative(t, Config{}, sink.ErrConfig, build, cases)
}

// Every signed numeric field of EffectConfig at -1, as for Config.
func TestEffectConfigNegativeValues(t *testing.T) {
	pool := &pgxpool.Pool{}
	built := func(t *testing.T, cfg EffectConfig) *Effects {
		e, err := NewEffects(pool, cfg)
		require.NoError(t, err)
		return e
	}
	build := func(cfg EffectConfig) error {
		_, err := NewEffects(pool, cfg)
		return err
	}
	cases := configcases.Horizon("Horizon", "SourceRetention", func(t *testing.T, cfg EffectConfig) {
		n, err := built(t, cfg).Prune(context.Background())
		require.NoError(t, err, "Prune does not reach the database")
		assert.Zero(t, n, "no marker is pruned")
	})
	cases = append(cases, configcases.Retry("Retry", func(t *testing.T, cfg EffectConfig) sink.RetryPolicy {
		return built(t, cfg).cfg.Retry
	})...)
	configtest.Negative(t, EffectConfig{}, sink.ErrConfig, build, cases)
}
