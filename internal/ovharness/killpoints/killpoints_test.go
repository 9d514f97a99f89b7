package killpoints

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/ledger/consumer"
)

func TestParseFaults(t *testing.T) {
	fs, err := Parse(" revoke-written:2, dlq-sent:1 ")
	require.NoError(t, err)
	assert.Equal(t, map[string]int{RevokeWritten: 2, DLQSent: 1}, fs.at)
	empty, err := Parse("")
	require.NoError(t, err)
	assert.Empty(t, empty.at)
	for _, bad := range []string{"revoke-written", "revoke-written:0", "nowhere:1", "close-written:x"} {
		_, err := Parse(bad)
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
		fs, err := Parse(tc.armed)
		require.NoError(t, err)
		kills := 0
		fs.kill = func() { kills++ }
		tc.feed(faultHook{fs})
		assert.Equal(t, tc.kills, kills, tc.armed)
	}
}
