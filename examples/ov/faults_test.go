package main

import (
	"errors"
	"math"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/ledger/consumer"
)

func TestParseFaults(t *testing.T) {
	fs, err := parseFaults(" revoke-written:2, dlq-sent:1 ")
	require.NoError(t, err)
	assert.Equal(t, map[string]int{FaultRevokeWritten: 2, FaultDLQSent: 1}, fs.at)
	empty, err := parseFaults("")
	require.NoError(t, err)
	assert.Empty(t, empty.at)
	for _, bad := range []string{"revoke-written", "revoke-written:0", "nowhere:1", "close-written:x"} {
		_, err := parseFaults(bad)
		assert.Error(t, err, bad)
	}
}

// TestFaultHookPoints feeds the hook the consumer's reports and checks which point each one
// counts as, and that the process dies at the armed occurrence.
func TestFaultHookPoints(t *testing.T) {
	src := ledger.TopicPartition{Topic: "p", Partition: 1}
	at := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	tick := consumer.WriteInfo{Kind: consumer.WriteClose, Source: src, Rows: 3, ClosedThrough: at}
	revoke := tick
	revoke.Revoke = true
	progressOnly := revoke
	progressOnly.Rows = 0
	failed := revoke
	failed.Err = errors.New("connection reset")
	state := consumer.WriteInfo{Kind: consumer.WriteState, Table: "t", Rows: 5, Revoke: true}

	for _, tc := range []struct {
		armed string
		feed  func(faultHook)
		kills int
	}{
		{"close-written:1", func(h faultHook) { h.OnWrite(revoke); h.OnWrite(tick) }, 1},
		{"revoke-written:2", func(h faultHook) {
			h.OnWrite(tick)
			h.OnWrite(progressOnly)
			h.OnWrite(failed)
			h.OnWrite(state)
			h.OnWrite(revoke)
		}, 0},
		{"revoke-written:2", func(h faultHook) { h.OnWrite(revoke); h.OnWrite(revoke) }, 1},
		{"revoke-committed:1", func(h faultHook) {
			h.OnCommit(consumer.CommitInfo{Reason: consumer.CommitTick})
			h.OnCommit(consumer.CommitInfo{Reason: consumer.CommitShutdown})
		}, 0},
		{"revoke-committed:1", func(h faultHook) { h.OnCommit(consumer.CommitInfo{Reason: consumer.CommitRevoke}) }, 1},
		{"dlq-sent:1", func(h faultHook) {
			h.OnMessage(consumer.MessageInfo{Decision: consumer.Late})
			h.OnMessage(consumer.MessageInfo{Decision: consumer.DeadLettered})
		}, 1},
		{"dlq-reported:1", func(h faultHook) {
			h.OnDeadLetter(consumer.DeadLetterInfo{Err: errors.New("timed out")})
			h.OnDeadLetter(consumer.DeadLetterInfo{})
		}, 1},
	} {
		fs, err := parseFaults(tc.armed)
		require.NoError(t, err)
		kills := 0
		fs.kill = func() { kills++ }
		tc.feed(faultHook{fs})
		assert.Equal(t, tc.kills, kills, tc.armed)
	}
}

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  bool
	}{
		{"268435456", 256 << 20, false},
		{"256MiB", 256 << 20, false},
		{" 1 GiB", 1 << 30, false},
		{"64KiB", 64 << 10, false},
		{"-1", -1, false},
		{"0", 0, false},
		{"lots", 0, true},
		{"1.5GiB", 0, true},
	} {
		got, err := parseBytes(tc.in)
		if tc.err {
			assert.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}

func TestSetGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	percent, limit := setGC(0)
	assert.Equal(t, gcPercent, percent)
	assert.Equal(t, int64(consumer.DefaultBufferLimit+gcRoom), limit)
	_, limit = setGC(1 << 30)
	assert.Equal(t, int64(1<<30+gcRoom), limit)

	debug.SetGCPercent(100)
	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOGC", "150")
	t.Setenv("GOMEMLIMIT", "1GiB")
	percent, limit = setGC(0)
	assert.Equal(t, 100, percent, "the environment wins")
	assert.Equal(t, int64(math.MaxInt64), limit)
}
