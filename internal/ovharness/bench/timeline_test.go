package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/ledger/consumer"
)

// readTimeline parses a timeline's lines.
func readTimeline(t *testing.T, r io.Reader) []timelineLine {
	t.Helper()
	var out []timelineLine
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var l timelineLine
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l), "line %q", sc.Text())
		out = append(out, l)
	}
	require.NoError(t, sc.Err())
	return out
}

// Each tick and each write is one line, at the time since the phase started, with what the
// hook reported.
func TestTimelineLines(t *testing.T) {
	runtime.GC() // the live heap is the last completed cycle's: none yet in a fresh test binary
	var buf bytes.Buffer
	now := time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC)
	tl := newTimeline(&buf, func() time.Time { return now })
	now = now.Add(1500 * time.Millisecond)
	tl.OnTick(consumer.TickInfo{Duration: 40 * time.Millisecond, Waited: 300 * time.Millisecond,
		WindowBytes: 1 << 20, BacklogBytes: 2 << 20, OpenKeys: 7})
	now = now.Add(250 * time.Millisecond)
	tl.OnWrite(consumer.WriteInfo{Kind: consumer.WriteClose, Source: ledger.TopicPartition{Topic: "t", Partition: 3},
		Rows: 12, Duration: 90 * time.Millisecond})
	tl.OnWrite(consumer.WriteInfo{Kind: consumer.WriteState, Table: "vehicle_latest", Rows: 5, Err: errors.New("refused")})

	lines := readTimeline(t, &buf)
	require.Len(t, lines, 3)
	tick, closeW, state := lines[0], lines[1], lines[2]
	assert.Equal(t, timelineLine{At: 1.5, Event: "tick", DurationMs: 40, WaitedMs: 300, WindowBytes: 1 << 20,
		BacklogBytes: 2 << 20, OpenKeys: 7, GCCPU: tick.GCCPU, LiveHeap: tick.LiveHeap, GCCycles: tick.GCCycles}, tick)
	assert.Equal(t, timelineLine{At: 1.75, Event: "write", Kind: "close", Source: "t[3]", Rows: 12, DurationMs: 90,
		GCCPU: closeW.GCCPU, LiveHeap: closeW.LiveHeap, GCCycles: closeW.GCCycles}, closeW)
	assert.Equal(t, "state", state.Kind)
	assert.Equal(t, "vehicle_latest", state.Table)
	assert.Equal(t, "refused", state.Err)
	for _, l := range lines {
		assert.Positive(t, l.LiveHeap, "the runtime's live heap")
		assert.GreaterOrEqual(t, l.GCCPU, 0.0, "the collector's CPU since the line before")
	}
	assert.GreaterOrEqual(t, closeW.GCCycles, tick.GCCycles)
}
