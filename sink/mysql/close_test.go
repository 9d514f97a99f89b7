package mysql_test

import (
	"testing"

	"github.com/streamledger/streamledger/internal/sinkfixture"
)

// A gate runs with the table's lock row held: another close of the same table waits for it,
// and is written after the gated call.
func TestGateHoldsTheLockRow(t *testing.T) {
	s, _ := newSink(t, nil)
	sinkfixture.GateHoldsCloses(t, testCtx(t), s, s, closeBatch(t, 0, 1), closeBatch(t, 1, 2))
}
