package sinktest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/sinktest"
)

func newMemory(t *testing.T, s sinktest.Setup) sinktest.Subject {
	m, err := sinktest.NewMemory(sinktest.MemoryConfig{Aggregates: s.Aggregates, States: s.States, Clock: s.Clock, Horizon: s.Horizon})
	require.NoError(t, err)
	return m
}

func TestMemoryConformance(t *testing.T) {
	sinktest.Run(t, newMemory, sinktest.Features{ConcurrentWriters: true})
}

func TestMemoryFailNextWritesNothing(t *testing.T) {
	ctx := context.Background()
	m := newMemory(t, sinktest.Setup{Aggregates: sinkfixture.Aggregates(), States: sinkfixture.States(), Clock: sinkfixture.Now}).(*sinktest.Memory)
	boom := errors.New("boom")
	m.FailNext(boom)
	start, end := sinkfixture.Start(), sinkfixture.Start().Add(300e9)
	b := sink.CloseBatch{Source: sink.TopicPartition{Topic: "events"}, ClosedThrough: end, Partials: []sink.Partial{{
		Key: sink.Key{WindowStart: start, Dimension: "line", DimensionID: "1"}, WindowEnd: end, Stats: sinkfixture.Stats(t, 1, 2),
	}}}
	require.ErrorIs(t, m.WriteClose(ctx, b), boom)
	_, ok, err := m.Aggregate(ctx, b.Partials[0].Key)
	require.NoError(t, err)
	assert.False(t, ok, "a failed write leaves nothing")
	assert.Empty(t, m.Closes())

	require.NoError(t, m.WriteClose(ctx, b))
	assert.Len(t, m.Closes(), 1, "the next write succeeds and is recorded")
}

func TestMemoryRejectsBadConfig(t *testing.T) {
	_, err := sinktest.NewMemory(sinktest.MemoryConfig{Aggregates: sink.AggregateSpec{Quantile: 2}})
	assert.ErrorIs(t, err, sink.ErrConfig)
	assert.ErrorContains(t, err, "MemoryConfig.Aggregates.Quantile")
	_, err = sinktest.NewMemory(sinktest.MemoryConfig{States: []sink.StateSpec{{Table: "x"}}})
	assert.ErrorIs(t, err, sink.ErrConfig)
	assert.ErrorContains(t, err, "MemoryConfig.States[0]")
}
