package mysql_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/sink"
)

// A gate runs with the table's lock row held: another close of the same table waits for it,
// and is written after the gated call.
func TestGateHoldsTheLockRow(t *testing.T) {
	ctx := testCtx(t)
	s, _ := newSink(t, nil)
	first, second := closeBatch(t, 0, 1), closeBatch(t, 1, 2)
	sinkfixture.GateHoldsCloses(t, ctx, s, s, first, second)
	got, err := s.ClosedThrough(ctx, first.Source, second.Source)
	require.NoError(t, err)
	assert.Equal(t, map[sink.TopicPartition]time.Time{first.Source: first.ClosedThrough, second.Source: second.ClosedThrough}, got)
}
