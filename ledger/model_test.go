package ledger_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/ledger"
)

// model is the ledger as the design states it, one entry per message and no runs: the oracle
// that the property and fuzz tests hold the real ledger to.
type model struct {
	entries   []modelEntry
	released  int // entries in the released prefix
	closed    time.Time
	hasClosed bool
	flushed   uint64
	mark      time.Time
	hasMark   bool
	last      int64
}

type modelEntry struct {
	off     int64
	end     time.Time // zero: no window
	flush   uint64
	ack     bool
	acked   bool
	mark    time.Time
	hasMark bool
}

func (m *model) cond(e modelEntry) ledger.Condition {
	c := ledger.Flush(e.flush)
	if !e.end.IsZero() {
		c = c.And(ledger.Window(e.end))
	}
	if e.ack {
		c = c.And(ledger.Ack())
	}
	return c
}

func (m *model) durable(e modelEntry) bool {
	if !e.end.IsZero() && (!m.hasClosed || e.end.After(m.closed)) {
		return false
	}
	return e.flush <= m.flushed && (!e.ack || e.acked)
}

func (m *model) committable() int64 {
	for m.released < len(m.entries) && m.durable(m.entries[m.released]) {
		m.released++
	}
	if m.released == 0 {
		return -1
	}
	return m.entries[m.released-1].off + 1
}

func (m *model) checkpoint() (time.Time, bool) {
	m.committable()
	if m.released < len(m.entries) {
		e := m.entries[m.released]
		return e.mark, e.hasMark
	}
	return m.mark, m.hasMark
}

// harness drives a real Partition and the model with the same operations and compares them.
type harness struct {
	t testing.TB
	p *ledger.Partition
	m *model
}

func newHarness(t testing.TB) *harness {
	return &harness{t: t, p: ledger.NewPartition(), m: &model{last: -1}}
}

func (h *harness) add(gap int64, endMin int, flush uint64, ack bool) {
	e := modelEntry{off: h.m.last + 1 + gap, flush: flush, ack: ack, mark: h.m.mark, hasMark: h.m.hasMark}
	if endMin > 0 {
		e.end = t0.Add(time.Duration(endMin) * time.Minute)
	}
	require.NoError(h.t, h.p.Add(e.off, h.m.cond(e)))
	h.m.last = e.off
	h.m.entries = append(h.m.entries, e)
}

// ack acks the pending ack entry picked by i, or an offset that must be refused.
func (h *harness) ack(i int) {
	var candidates []int
	for j := h.m.released; j < len(h.m.entries); j++ {
		if h.m.entries[j].ack {
			candidates = append(candidates, j)
		}
	}
	if len(candidates) == 0 {
		require.Error(h.t, h.p.Ack(h.m.last+1), "an offset never added")
		return
	}
	j := candidates[i%len(candidates)]
	err := h.p.Ack(h.m.entries[j].off)
	if h.m.entries[j].acked {
		require.ErrorIs(h.t, err, ledger.ErrAlreadyAcked)
		return
	}
	require.NoError(h.t, err)
	h.m.entries[j].acked = true
}

func (h *harness) closeThrough(min int) {
	ct := t0.Add(time.Duration(min) * time.Minute)
	err := h.p.CloseThrough(ct)
	if h.m.hasClosed && ct.Before(h.m.closed) {
		require.ErrorIs(h.t, err, ledger.ErrRegression)
		return
	}
	require.NoError(h.t, err)
	h.m.closed, h.m.hasClosed = ct, true
}

func (h *harness) flush(seq uint64) {
	err := h.p.Flushed(seq)
	if seq < h.m.flushed {
		require.ErrorIs(h.t, err, ledger.ErrRegression)
		return
	}
	require.NoError(h.t, err)
	h.m.flushed = seq
}

func (h *harness) setWatermark(min int) {
	w := t0.Add(time.Duration(min) * time.Minute)
	h.p.SetWatermark(w)
	h.m.mark, h.m.hasMark = w, true
}

func (h *harness) check(step string) {
	want := h.m.committable()
	got, ok := h.p.Committable()
	if !ok {
		got = -1
	}
	require.Equal(h.t, want, got, "committable after %s", step)
	// The guarantee itself, stated independently of the model's walk: no entry below the
	// committable offset is non-durable.
	for _, e := range h.m.entries {
		if e.off < got {
			require.True(h.t, h.m.durable(e), "offset %d committed while not durable", e.off)
		}
	}
	require.EqualValues(h.t, len(h.m.entries)-h.m.released, h.p.Pending(), "pending after %s", step)
	wantMark, wantHas := h.m.checkpoint()
	cp, has := h.p.Checkpoint()
	require.Equal(h.t, wantHas, has, "checkpoint presence after %s", step)
	if has {
		require.True(h.t, wantMark.Equal(cp.Watermark), "checkpoint after %s: want %v, got %v", step, wantMark, cp.Watermark)
	}
}

// apply runs one operation chosen by op with argument arg.
func (h *harness) apply(op, arg byte) string {
	switch op % 6 {
	case 0, 1:
		ack := arg&0x40 != 0
		h.add(int64(arg>>7), int(arg%6), uint64(arg>>3)%3, ack)
		return "add"
	case 2:
		h.ack(int(arg))
		return "ack"
	case 3:
		h.closeThrough(int(arg % 8))
		return "closeThrough"
	case 4:
		h.flush(uint64(arg % 4))
		return "flush"
	default:
		h.setWatermark(int(arg % 16))
		return "setWatermark"
	}
}

// Random interleavings of add, ack, flush, watermark and close never yield a committable past a
// non-durable entry, and agree with the model in every observable.
func TestPropertyRandomInterleavings(t *testing.T) {
	for seed := uint64(0); seed < 300; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			h := newHarness(t)
			for step := 0; step < 400; step++ {
				op := h.apply(byte(r.IntN(256)), byte(r.IntN(256)))
				h.check(fmt.Sprintf("step %d (%s)", step, op))
			}
		})
	}
}

func FuzzPartition(f *testing.F) {
	f.Add([]byte{0, 1, 0, 0x41, 3, 5, 2, 0, 4, 1})
	f.Add([]byte{1, 0x40, 1, 0x40, 1, 0x40, 2, 1, 2, 0, 2, 2})
	f.Add([]byte{0, 3, 5, 2, 0, 2, 3, 7, 5, 9, 0, 0xC1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		h := newHarness(t)
		for i := 0; i+1 < len(ops); i += 2 {
			op := h.apply(ops[i], ops[i+1])
			h.check(fmt.Sprintf("op %d (%s)", i/2, op))
		}
	})
}
