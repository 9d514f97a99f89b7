package sink_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/sink/sinktest"
)

// The sink of Example_writingASink passes the conformance suite, as its doc says.
func TestExampleSinkConformance(t *testing.T) {
	sinktest.Run(t, func(t *testing.T, s sinktest.Setup) sinktest.Subject {
		m, err := sinktest.NewMemory(sinktest.MemoryConfig{Aggregates: s.Aggregates, States: s.States, Clock: s.Clock, Horizon: s.Horizon})
		require.NoError(t, err)
		return &countingSink{Memory: m}
	}, sinktest.Features{ConcurrentWriters: true})
}
