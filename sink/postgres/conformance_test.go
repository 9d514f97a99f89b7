package postgres_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/pgtest"
	"github.com/streamledger/streamledger/sink/postgres"
	"github.com/streamledger/streamledger/sink/sinktest"
)

func factory(st postgres.Strategy) sinktest.Factory {
	return func(t *testing.T, setup sinktest.Setup) sinktest.Subject {
		db := pgtest.New(t)
		s, err := postgres.New(db.Pool, postgres.Config{
			Schema: db.Schema, Aggregates: setup.Aggregates, States: setup.States, Clock: setup.Clock,
			Retry: fastRetry, Horizon: setup.Horizon,
		})
		require.NoError(t, err)
		postgres.SetStrategy(s, st)
		require.NoError(t, s.Migrate(testCtx(t)))
		return s
	}
}

func TestConformance(t *testing.T) {
	sinktest.Run(t, factory(postgres.StrategyCopy), sinktest.Features{ConcurrentWriters: true})
}

// Every strategy must behave the same; COPY, the one every Sink uses, runs the full suite above.
func TestConformanceStrategies(t *testing.T) {
	if testing.Short() {
		t.Skip("the default strategy's run covers -short")
	}
	for _, st := range []postgres.Strategy{postgres.StrategyUnnest, postgres.StrategyBatch} {
		t.Run(st.String(), func(t *testing.T) {
			sinktest.Run(t, factory(st), sinktest.Features{ConcurrentWriters: true, Rounds: 1})
		})
	}
}
