package sinktest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/configtest"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/configcases"
)

// Every signed numeric field of MemoryConfig at -1: NewMemory refuses it, naming the field,
// or the field's documented meaning of a negative value holds.
func TestMemoryConfigNegativeValues(t *testing.T) {
	built := func(t *testing.T, cfg MemoryConfig) *Memory {
		m, err := NewMemory(cfg)
		require.NoError(t, err)
		return m
	}
	build := func(cfg MemoryConfig) error {
		_, err := NewMemory(cfg)
		return err
	}
	cases := configcases.Aggregates("Aggregates", func(t *testing.T, cfg MemoryConfig) sink.AggregateSpec {
		agg, _ := built(t, cfg).Tables()
		return agg
	})
	cases = append(cases, configcases.Horizon("Horizon", "SourceRetention", func(t *testing.T, cfg MemoryConfig) {
		_, due := built(t, cfg).pruner.Due(time.Now().Add(100 * 365 * 24 * time.Hour))
		assert.False(t, due, "folded windows are never pruned")
	})...)
	configtest.Negative(t, MemoryConfig{}, sink.ErrConfig, build, cases)
}
