package mysql

import (
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/configtest"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/configcases"
)

// Every signed numeric field of Config and EffectConfig at -1: the constructor refuses it,
// naming the field, or the field's documented meaning of a negative value holds. Neither
// constructor touches the database, so a handle that connects nowhere serves.
func TestConfigNegativeValues(t *testing.T) {
	db := &sql.DB{}
	build := func(cfg Config) error {
		_, err := New(db, cfg)
		return err
	}
	built := func(t *testing.T, cfg Config) configcases.Built {
		s, err := New(db, cfg)
		require.NoError(t, err)
		agg, _ := s.Tables()
		return configcases.Built{Aggregates: agg, Pruner: s.pruner, Retry: s.cfg.Retry}
	}
	cases := append([]configtest.Case[Config]{{Field: "MaxStatementBytes", Refused: true}}, configcases.Sink(built)...)
	configtest.Negative(t, Config{}, sink.ErrConfig, build, cases)
}

func TestEffectConfigNegativeValues(t *testing.T) {
	db := &sql.DB{}
	build := func(cfg EffectConfig) error {
		_, err := NewEffects(db, cfg)
		return err
	}
	built := func(t *testing.T, cfg EffectConfig) configcases.Built {
		e, err := NewEffects(db, cfg)
		require.NoError(t, err)
		return configcases.Built{Prune: e.Prune, Retry: e.cfg.Retry}
	}
	configtest.Negative(t, EffectConfig{}, sink.ErrConfig, build, configcases.Effects(built))
}
