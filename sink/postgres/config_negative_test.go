package postgres

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/configtest"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/configcases"
)

// Every signed numeric field of Config and EffectConfig at -1: the constructor refuses it,
// naming the field, or the field's documented meaning of a negative value holds. Neither
// constructor touches the database, so a pool that connects nowhere serves.
func TestConfigNegativeValues(t *testing.T) {
	pool := &pgxpool.Pool{}
	build := func(cfg Config) error {
		_, err := New(pool, cfg)
		return err
	}
	built := func(t *testing.T, cfg Config) configcases.Built {
		s, err := New(pool, cfg)
		require.NoError(t, err)
		agg, _ := s.Tables()
		return configcases.Built{Aggregates: agg, Pruner: s.pruner, Retry: s.cfg.Retry}
	}
	cases := configcases.Sink(built)
	configtest.Negative(t, Config{}, sink.ErrConfig, build, cases)
}

func TestEffectConfigNegativeValues(t *testing.T) {
	pool := &pgxpool.Pool{}
	build := func(cfg EffectConfig) error {
		_, err := NewEffects(pool, cfg)
		return err
	}
	built := func(t *testing.T, cfg EffectConfig) configcases.Built {
		e, err := NewEffects(pool, cfg)
		require.NoError(t, err)
		return configcases.Built{Prune: e.Prune, Retry: e.cfg.Retry}
	}
	configtest.Negative(t, EffectConfig{}, sink.ErrConfig, build, configcases.Effects(built))
}
