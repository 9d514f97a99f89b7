package ledger_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/ledger"
)

var t0 = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

func committable(t *testing.T, p *ledger.Partition) int64 {
	t.Helper()
	off, ok := p.Committable()
	if !ok {
		return -1
	}
	return off
}

// Offsets 100-103 alternate predictions (windowed) and positions (durable at the state
// flush): the committable offset moves only past windows written, in order.
func TestCommitsOnlyPastFinalizedWindowsInOrder(t *testing.T) {
	p := ledger.NewPartition()
	wEnd := t0.Add(5 * time.Minute)
	require.NoError(t, p.Add(100, ledger.Window(wEnd)))                    // prediction in [12:00, 12:05)
	require.NoError(t, p.Add(101, ledger.Flush(1)))                        // a position
	require.NoError(t, p.Add(102, ledger.Window(wEnd.Add(5*time.Minute)))) // prediction in [12:05, 12:10)
	require.NoError(t, p.Add(103, ledger.Flush(1)))
	require.NoError(t, p.Flushed(1))

	require.NoError(t, p.CloseThrough(t0.Add(4*time.Minute)))
	assert.EqualValues(t, -1, committable(t, p), "the head is still in an open window: nothing commits")

	require.NoError(t, p.CloseThrough(wEnd))
	assert.EqualValues(t, 102, committable(t, p), "100 and 101 are durable; 102 still open blocks 103")
	assert.EqualValues(t, 2, p.Pending())

	require.NoError(t, p.CloseThrough(wEnd.Add(5*time.Minute)))
	assert.EqualValues(t, 104, committable(t, p))
	assert.EqualValues(t, 0, p.Pending())
}

// A state row's entry is held until the flush that covers it.
func TestHoldsPositionsUntilStateFlush(t *testing.T) {
	p := ledger.NewPartition()
	require.NoError(t, p.Add(7, ledger.Flush(1)))
	assert.EqualValues(t, -1, committable(t, p))
	require.NoError(t, p.Flushed(1))
	assert.EqualValues(t, 8, committable(t, p))
}

// A dead letter is not handled when it is sent: it is durable only on its
// positive delivery report, so a crash before the producer flushed redelivers it.
func TestDeadLetterHeldUntilDeliveryReport(t *testing.T) {
	p := ledger.NewPartition()
	require.NoError(t, p.Add(10, ledger.Flush(1)))
	require.NoError(t, p.Add(11, ledger.Ack())) // dead letter, sent, not yet confirmed
	require.NoError(t, p.Add(12, ledger.Flush(1)))
	require.NoError(t, p.Flushed(1))
	assert.EqualValues(t, 11, committable(t, p), "the unconfirmed dead letter blocks the commit")
	require.NoError(t, p.Ack(11))
	assert.EqualValues(t, 13, committable(t, p))
}

func TestAcksOutOfOrderCommitThePrefix(t *testing.T) {
	p := ledger.NewPartition()
	for off := int64(0); off < 200; off++ {
		require.NoError(t, p.Add(off, ledger.Ack()))
	}
	assert.Equal(t, 1, ledger.Runs(p))
	require.NoError(t, p.Ack(1))
	require.NoError(t, p.Ack(2))
	assert.EqualValues(t, -1, committable(t, p))
	require.NoError(t, p.Ack(0))
	assert.EqualValues(t, 3, committable(t, p))
	for off := int64(199); off >= 3; off-- {
		if off == 100 {
			continue
		}
		require.NoError(t, p.Ack(off))
	}
	assert.EqualValues(t, 100, committable(t, p), "64-bit word boundaries are crossed")
	require.NoError(t, p.Ack(100))
	assert.EqualValues(t, 200, committable(t, p))
	assert.EqualValues(t, 0, p.Pending())
}

func TestGapsInOffsets(t *testing.T) {
	p := ledger.NewPartition()
	require.NoError(t, p.Add(5, ledger.Flush(1)))
	require.NoError(t, p.Add(9, ledger.Flush(1))) // 6-8 compacted away
	require.NoError(t, p.Add(20, ledger.Ack()))
	require.NoError(t, p.Add(22, ledger.Ack())) // a gap starts a new ack run
	assert.Equal(t, 3, ledger.Runs(p))
	require.NoError(t, p.Flushed(1))
	assert.EqualValues(t, 10, committable(t, p))
	require.NoError(t, p.Ack(22))
	assert.EqualValues(t, 10, committable(t, p))
	require.NoError(t, p.Ack(20))
	assert.EqualValues(t, 23, committable(t, p))
	require.ErrorIs(t, p.Ack(21), ledger.ErrReleased, "a gap below the first pending offset")
	require.ErrorIs(t, p.Ack(20), ledger.ErrReleased, "acked and released")
	require.ErrorIs(t, p.Ack(23), ledger.ErrUnknownOffset, "above the last added")
}

func TestCombinedConditions(t *testing.T) {
	p := ledger.NewPartition()
	end := t0.Add(5 * time.Minute)
	require.NoError(t, p.Add(0, ledger.Window(end).And(ledger.Flush(2)).And(ledger.Ack())))
	require.NoError(t, p.CloseThrough(end))
	require.NoError(t, p.Ack(0))
	assert.EqualValues(t, -1, committable(t, p), "the flush part still holds it")
	require.NoError(t, p.Flushed(2))
	assert.EqualValues(t, 1, committable(t, p))
}

func TestImmediateEntries(t *testing.T) {
	p := ledger.NewPartition()
	require.NoError(t, p.Add(0, ledger.Condition{}))
	require.NoError(t, p.Add(1, ledger.Flush(0)))
	assert.Equal(t, 1, ledger.Runs(p), "Flush(0) is the zero Condition")
	assert.EqualValues(t, 2, committable(t, p))
}

func TestMisuseIsAnError(t *testing.T) {
	end := t0.Add(5 * time.Minute)
	tests := []struct {
		name string
		do   func(p *ledger.Partition) error
		want error
	}{
		{"offset repeated", func(p *ledger.Partition) error { return p.Add(3, ledger.Ack()) }, ledger.ErrOffsetOrder},
		{"offset backwards", func(p *ledger.Partition) error { return p.Add(1, ledger.Ack()) }, ledger.ErrOffsetOrder},
		{"ack never added", func(p *ledger.Partition) error { return p.Ack(99) }, ledger.ErrUnknownOffset},
		{"ack below head", func(p *ledger.Partition) error { return p.Ack(0) }, ledger.ErrReleased},
		{"ack a window entry", func(p *ledger.Partition) error { return p.Ack(2) }, ledger.ErrNotAckable},
		{"ack twice", func(p *ledger.Partition) error { _ = p.Ack(3); return p.Ack(3) }, ledger.ErrAlreadyAcked},
		{"closed_through backwards", func(p *ledger.Partition) error { return p.CloseThrough(t0) }, ledger.ErrRegression},
		{"flush backwards", func(p *ledger.Partition) error { return p.Flushed(0) }, ledger.ErrRegression},
		{"negative offset", func(p *ledger.Partition) error { return ledger.NewPartition().Add(-1, ledger.Ack()) }, ledger.ErrOffsetOrder},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ledger.NewPartition()
			require.NoError(t, p.Add(2, ledger.Window(end)))
			require.NoError(t, p.Add(3, ledger.Ack()))
			require.NoError(t, p.CloseThrough(t0.Add(time.Minute)))
			require.NoError(t, p.Flushed(1))
			before, _ := p.Committable()
			pending := p.Pending()
			err := tt.do(p)
			require.ErrorIs(t, err, tt.want)
			assert.NotEmpty(t, err.Error())
			after, _ := p.Committable()
			assert.Equal(t, before, after, "misuse changes nothing")
			assert.Equal(t, pending, p.Pending())
		})
	}
}

func TestCheckpointIsTheWatermarkAsOfTheCommittableOffset(t *testing.T) {
	p := ledger.NewPartition()
	_, ok := p.Checkpoint()
	assert.False(t, ok, "no watermark yet")

	w1, w2 := t0.Add(5*time.Minute), t0.Add(10*time.Minute)
	p.SetWatermark(t0.Add(-time.Hour))
	require.NoError(t, p.Add(0, ledger.Window(w1)))
	p.SetWatermark(t0.Add(-2 * time.Minute))
	require.NoError(t, p.Add(1, ledger.Window(w1)))
	p.SetWatermark(t0.Add(2 * time.Minute))
	require.NoError(t, p.Add(2, ledger.Window(w2))) // new run: starts at wm 12:02
	p.SetWatermark(t0.Add(4 * time.Minute))
	require.NoError(t, p.Add(3, ledger.Window(w2)))
	p.SetWatermark(t0.Add(6 * time.Minute))

	cp, ok := p.Checkpoint()
	require.True(t, ok)
	assert.Equal(t, t0.Add(-time.Hour), cp.Watermark, "nothing released: the watermark before offset 0")

	require.NoError(t, p.CloseThrough(w1))
	assert.EqualValues(t, 2, committable(t, p))
	cp, _ = p.Checkpoint()
	assert.Equal(t, t0.Add(2*time.Minute), cp.Watermark, "the watermark after offsets 0-1, not the current one")

	require.NoError(t, p.CloseThrough(w2))
	assert.EqualValues(t, 4, committable(t, p))
	cp, _ = p.Checkpoint()
	assert.Equal(t, t0.Add(6*time.Minute), cp.Watermark, "all released: the current watermark")

	p.SetWatermark(t0.Add(9 * time.Minute)) // an idle advance at the committed offset
	cp, _ = p.Checkpoint()
	assert.Equal(t, t0.Add(9*time.Minute), cp.Watermark)
}

func TestAckRunsSplitWhenTheWatermarkMoves(t *testing.T) {
	p := ledger.NewPartition()
	p.SetWatermark(t0)
	require.NoError(t, p.Add(0, ledger.Ack()))
	p.SetWatermark(t0.Add(time.Minute))
	require.NoError(t, p.Add(1, ledger.Ack()))
	assert.Equal(t, 2, ledger.Runs(p))
	require.NoError(t, p.Ack(0))
	assert.EqualValues(t, 1, committable(t, p))
	cp, _ := p.Checkpoint()
	assert.Equal(t, t0.Add(time.Minute), cp.Watermark)
}

func TestFarTimesSaturateInOrder(t *testing.T) {
	p := ledger.NewPartition()
	require.NoError(t, p.Add(0, ledger.Window(time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC))))
	require.NoError(t, p.CloseThrough(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)))
	assert.EqualValues(t, -1, committable(t, p), "year 1 is not past year 9999")
	assert.Equal(t, "window<=2262-04-11T23:47:16.854775807Z", ledger.Window(time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)).String())
}

func TestConditionString(t *testing.T) {
	assert.Equal(t, "immediate", ledger.Condition{}.String())
	assert.Equal(t, "window<=2024-05-01T12:00:00Z+flush#3+ack", ledger.Window(t0).And(ledger.Flush(3)).And(ledger.Ack()).String())
	end, ok := ledger.Window(t0).And(ledger.Window(t0.Add(time.Minute))).HasWindow()
	assert.True(t, ok)
	assert.Equal(t, t0.Add(time.Minute), end, "And keeps the later window end")
	_, ok = ledger.Ack().HasWindow()
	assert.False(t, ok)
}
