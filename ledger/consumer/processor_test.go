package consumer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/sinktest"
)

const (
	A = Admitted
	L = Late
	D = DeadLettered
)

// The reference stream of one partition (lateness 2 min, 5-minute windows). Its decisions,
// closes and commit are worked out by hand in TestDecisionsClosesAndCommitMetadata.
var stream = []string{
	"w 1 A 1",  // 0: window end 12:05; wm 11:59
	"w 7 A 2",  // 1: end 12:10; wm 12:05
	"w 3 A 3",  // 2: end 12:05 <= wm 12:05: late
	"w 9 A 4",  // 3: end 12:10 > 12:05, admitted; wm 12:07
	"w 16 A 5", // 4: end 12:20; wm 12:14
	"w 11 B 6", // 5: end 12:15 > 12:14, admitted
	"w 8 A 7",  // 6: end 12:10 <= 12:14: late
	"w 2 A 8",  // 7: late
}

var streamOutcomes = []Decision{A, A, L, A, A, A, L, L}

func TestDecisionsClosesAndCommitMetadata(t *testing.T) {
	h := newHarness(t, nil)
	p0 := tp("t", 0)
	h.assign(p0, -1, "")
	h.feed(p0, 0, stream...)
	require.Equal(t, streamOutcomes, h.outcomes(p0, 8))

	h.tick()
	// One batch: the windows [12:00,12:05) and [12:05,12:10), with closed_through = wm = 12:14.
	closes := h.closes()
	require.Len(t, closes, 1)
	assert.Equal(t, at("14"), closes[0].ClosedThrough)
	assert.Len(t, closes[0].Partials, 4, "two windows, keys A and all")
	a, ok, err := h.mem.Aggregate(context.Background(), sink.Key{WindowStart: at("5"), Dimension: "line", DimensionID: "A"})
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, int64(2), a.Count, "offsets 1 and 3; the late 6 is not in it")
	assert.Equal(t, 3.0, a.Mean)
	assert.Equal(t, "op-A", a.Attrs["owner"])

	// Offsets 0-3 are durable (written or late); 4 waits for the window ending 12:20.
	// The metadata carries the watermark as of offset 4: after 0-3 (12:09 - 2 min), before 4
	// raised it. Had the watermark reached the ledger before the entry was added, it would say
	// 12:14.
	assert.Equal(t, int64(4), h.committed(p0))
	assert.Equal(t, at("7"), h.checkpoint(p0))
	assert.GreaterOrEqual(t, h.chk.checkedCommits(), 1)
}

func TestRestartReplaysWithTheSameDecisions(t *testing.T) {
	first := newHarness(t, nil)
	p0 := tp("t", 0)
	first.assign(p0, -1, "")
	first.feed(p0, 0, stream...)
	first.tick()
	off, md := first.cl.committedAt(p0)
	require.Equal(t, int64(4), off)

	cases := []struct {
		name       string
		sink       *sinktest.Memory
		metadata   string
		restored   time.Time
		mdErr      error
		wantWarned bool
	}{
		// max(metadata 12:07, closed_through 12:14)
		{name: "same sink", sink: first.mem, metadata: md, restored: at("14")},
		// progress lost: the metadata alone restores the watermark as of offset 4
		{name: "progress lost", sink: newMemory(t), metadata: md, restored: at("7")},
		// garbled metadata: closed_through alone, with a warning
		{name: "garbled metadata", sink: first.mem, metadata: "\x00junk;;", restored: at("14"), mdErr: ledger.ErrBadMetadata, wantWarned: true},
		{name: "no metadata", sink: first.mem, metadata: "", restored: at("14"), mdErr: ledger.ErrNoMetadata},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config[string]) { c.Sink = tc.sink })
			h.chk.sink, h.chk.reader = tc.sink, tc.sink
			h.assign(p0, off, tc.metadata)
			ai, ok := h.chk.lastAssign(p0)
			require.True(t, ok)
			assert.Equal(t, tc.restored, ai.Watermark)
			if tc.mdErr != nil {
				assert.ErrorIs(t, ai.MetadataErr, tc.mdErr)
			} else {
				assert.NoError(t, ai.MetadataErr)
				assert.Equal(t, at("7"), ai.MetadataWatermark)
			}
			assert.Equal(t, tc.wantWarned, containsLog(h.logs, "commit metadata unreadable"))

			h.feed(p0, 4, stream[4:]...)
			d := h.chk.decisionsOf(p0)
			for o := int64(4); o < 8; o++ {
				assert.Equal(t, streamOutcomes[o], d[o], "offset %d decided as the first time", o)
			}
			// A replayed event of a window already written is late, so the window is never
			// rebuilt from a fragment.
			h.feed(p0, 8, "w 9 A 100")
			if tc.restored.Equal(at("14")) {
				assert.Equal(t, L, h.chk.decisionsOf(p0)[8])
			}
		})
	}
}

func containsLog(b *syncBuffer, s string) bool {
	return len(s) > 0 && len(b.String()) > 0 && indexOf(b.String(), s) >= 0
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func TestAccountingConsumedIsAdmittedPlusLatePlusDeadLettered(t *testing.T) {
	var lates []time.Time
	var parts []PartitionInfo
	h := newHarness(t, func(c *Config[string]) {
		c.OnLate = func(m *kafka.Message, ev Event[string], end time.Time) { lates = append(lates, end) }
		c.Hooks = append(c.Hooks, partitionHook(func(pi PartitionInfo) { parts = append(parts, pi) }))
	})
	p0, p1 := tp("t", 0), tp("u", 1)
	h.assign(p0, -1, "")
	h.assign(p1, -1, "")
	h.feed(p0, 0, stream...)
	h.feed(p1, 0, "x", "s 1", "nan 2", "c 20", "w 3 Z 1", "")
	h.tick()

	c := h.p.counters.snapshot()
	assert.Equal(t, int64(14), c.Consumed)
	assert.Equal(t, c.Consumed, c.Admitted+c.Late+c.DeadLettered)
	assert.Equal(t, int64(3+1), c.Late, "three in t, and the 12:03 event after the clock event at 12:20 in u")
	assert.Equal(t, int64(3), c.DeadLettered, "undecodable, invalid (NaN) and empty payloads")
	assert.Equal(t, []time.Time{at("5"), at("10"), at("5"), at("5")}, lates)

	require.Len(t, parts, 2)
	assert.Equal(t, PartitionInfo{
		TopicPartition: p0, Watermark: at("14"), ClosedThrough: at("14"), Lag: -1, Pending: 4,
		OpenWindows: 2, OpenKeys: 4,
	}, parts[0])
	for _, tp := range []ledger.TopicPartition{p0, p1} {
		d := h.chk.decisionsOf(tp)
		assert.Len(t, d, map[ledger.TopicPartition]int{p0: 8, p1: 6}[tp], "%v: every message decided once", tp)
	}
}

func TestTickReportsTheBufferedBytes(t *testing.T) {
	var ticks []TickInfo
	h := newHarness(t, func(c *Config[string]) {
		c.Hooks = append(c.Hooks, tickHook(func(i TickInfo) { ticks = append(ticks, i) }))
	})
	p0, p1 := tp("t", 0), tp("t", 1)
	h.assign(p0, -1, "")
	h.assign(p1, -1, "")
	h.feed(p0, 0, "w 1 A 1", "w 2 B 2", "w 7 A 3", "s 4")
	h.feed(p1, 0, "w 1 C 1")
	h.tick()

	require.Len(t, ticks, 1)
	var want int64
	for _, pt := range h.p.order {
		want += pt.win.Bytes()
	}
	assert.Positive(t, want, "windows are open")
	assert.Equal(t, want, ticks[0].WindowBytes, "the open windows' estimate, over every partition")
	assert.Zero(t, ticks[0].BacklogBytes, "the tick wrote the state row and the closes")

	h.mem.FailNext(errors.New("database down"))
	h.feed(p0, 4, "s 5")
	h.tick()
	require.Len(t, ticks, 2)
	assert.Positive(t, ticks[1].BacklogBytes, "the failed flush's row waits for the next tick")
	assert.Equal(t, h.p.retryBytes[sinkfixture.StateTable], ticks[1].BacklogBytes, "and is all the backlog: nothing else is unwritten")
}

type tickHook func(TickInfo)

func (f tickHook) OnTick(i TickInfo) { f(i) }

type partitionHook func(PartitionInfo)

func (f partitionHook) OnPartition(pi PartitionInfo) { f(pi) }

func TestStateRowsAreDurableOnlyAfterTheirFlush(t *testing.T) {
	h := newHarness(t, nil)
	p0 := tp("t", 0)
	h.assign(p0, -1, "")
	h.feed(p0, 0, "s 1", "s 2")
	h.mem.FailNext(errors.New("database down"))
	h.tick()
	assert.Equal(t, int64(-1), h.committed(p0), "the flush failed: nothing is durable")
	assert.Empty(t, h.mem.Upserts())

	h.feed(p0, 2, "s 3")
	h.tick()
	assert.Equal(t, int64(3), h.committed(p0))
	require.Len(t, h.mem.Upserts(), 1)
	assert.Len(t, h.mem.Upserts()[0].Rows, 3, "the failed rows are written with the newer one")
}

func TestFailedCloseWritePausesAndRefetches(t *testing.T) {
	h := newHarness(t, nil)
	p0 := tp("t", 0)
	h.assign(p0, -1, "")
	h.feed(p0, 0, "w 1 A 1", "w 7 A 2")
	h.mem.FailNext(errors.New("database down"))
	h.tick()
	assert.True(t, h.cl.paused[p0], "a partition whose write failed is paused")
	assert.Equal(t, int64(-1), h.committed(p0))

	// A message that was already fetched is not decided while the write is missing.
	h.feed(p0, 2, "w 8 A 3")
	assert.NotContains(t, h.chk.decisionsOf(p0), int64(2))

	h.tick()
	assert.False(t, h.cl.paused[p0], "resumed once the write succeeded")
	require.Len(t, h.cl.seeks, 1)
	assert.Equal(t, kafka.Offset(2), h.cl.seeks[0].Offset, "the dropped message is fetched again")
	assert.Equal(t, int64(1), h.committed(p0), "offset 0's window is written; offset 1's is open")
	require.Len(t, h.closes(), 1)
	assert.Equal(t, at("5"), h.closes()[0].ClosedThrough)

	h.feed(p0, 2, "w 8 A 3")
	assert.Equal(t, A, h.chk.decisionsOf(p0)[2])
}

func TestFailedWriteKeepsItsPartialsForTheNextClose(t *testing.T) {
	h := newHarness(t, nil)
	p0 := tp("t", 0)
	h.assign(p0, -1, "")
	h.feed(p0, 0, "w 1 A 1", "w 7 A 2")
	h.mem.FailNext(errors.New("down"))
	h.tick()
	require.Empty(t, h.closes())
	h.p.unpause(h.p.parts[p0], pauseWrite) // as if the write was retried later with more data
	h.feed(p0, 2, "w 13 A 3")              // wm 12:11 closes the window ending 12:10 too
	h.tick()
	closes := h.closes()
	require.Len(t, closes, 1, "one batch: the retried partials merged with the newer close")
	assert.Equal(t, at("11"), closes[0].ClosedThrough)
	assert.Len(t, closes[0].Partials, 4)
	assert.Equal(t, int64(2), h.committed(p0))
}

func TestIdleAdvanceIsWrittenBeforeTheNextMessage(t *testing.T) {
	for _, fail := range []bool{false, true} {
		name := map[bool]string{false: "write succeeds", true: "write fails"}[fail]
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, func(c *Config[string]) { c.IdleTimeout = 30 * time.Second })
			p0 := tp("t", 0)
			h.assign(p0, -1, "")
			h.feed(p0, 0, "w 1 A 1")
			h.cl.high[p0] = 1 // caught up
			h.tick()
			require.Equal(t, int64(-1), h.committed(p0))

			// Six quiet minutes: wm = 12:01 + 6 min - 2 min = 12:05 closes [12:00, 12:05).
			h.clock.Advance(6 * time.Minute)
			if fail {
				h.mem.FailNext(errors.New("down"))
			}
			h.tick()
			if fail {
				assert.True(t, h.cl.paused[p0])
				assert.Equal(t, int64(-1), h.committed(p0), "neither the offset nor the advance is committed")
				// The next message is not decided against an advance that is not written.
				h.feed(p0, 1, "w 4 A 9")
				assert.NotContains(t, h.chk.decisionsOf(p0), int64(1))
				h.tick()
				assert.False(t, h.cl.paused[p0])
				assert.Equal(t, kafka.Offset(1), h.cl.seeks[0].Offset)
			}
			closes := h.closes()
			require.Len(t, closes, 2, "the registration at 11:59, then the advance")
			assert.Equal(t, at("5"), closes[1].ClosedThrough, "the idle advance is in the partition's progress")
			assert.Len(t, closes[1].Partials, 2)
			assert.Equal(t, int64(1), h.committed(p0))
			assert.True(t, !h.checkpoint(p0).Before(at("5")), "the commit carries the advance")

			h.feed(p0, 1, "w 4 A 9")
			assert.Equal(t, L, h.chk.decisionsOf(p0)[1], "data for a window the advance closed is late")
		})
	}
}

func TestNoIdleAdvanceWhileBehindOrDisabled(t *testing.T) {
	for _, tc := range []struct {
		name string
		idle time.Duration
		high int64
	}{
		{"not caught up", 30 * time.Second, 5},
		{"idleness disabled", -1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config[string]) { c.IdleTimeout = tc.idle })
			p0 := tp("t", 0)
			h.assign(p0, -1, "")
			h.feed(p0, 0, "w 1 A 1")
			h.cl.high[p0] = tc.high
			h.tick()
			h.clock.Advance(time.Hour)
			h.tick()
			assert.Equal(t, at("-1"), h.p.parts[p0].written, "the watermark stayed where the data put it")
			assert.Equal(t, int64(-1), h.committed(p0))
		})
	}
}

func TestDeadLetterIsDurableOnlyOnAPositiveReport(t *testing.T) {
	h := newHarness(t, nil)
	p0 := tp("t", 0)
	h.assign(p0, -1, "")
	h.feed(p0, 0, "s 1", "x bad", "s 2")
	h.tick()
	assert.Equal(t, int64(1), h.committed(p0), "offset 1 waits for its delivery report")
	require.Equal(t, 1, h.dlq.count())
	assert.Equal(t, int64(1), h.dlq.sent[0].rec.Offset)
	assert.Equal(t, []byte("x bad"), h.dlq.sent[0].rec.Value)

	h.dlq.deliver(0, errors.New("broker said no"))
	h.tick()
	assert.Equal(t, int64(1), h.committed(p0), "a failed delivery is never acked")
	assert.Equal(t, 1, h.dlq.count(), "sent again only after the backoff")

	h.clock.Advance(time.Second)
	h.dlq.failSend = []error{errors.New("queue full")}
	h.tick()
	assert.Equal(t, 1, h.dlq.count(), "a send that fails at once is scheduled again too")
	h.clock.Advance(2 * time.Second)
	h.tick()
	require.Equal(t, 2, h.dlq.count())
	assert.Equal(t, int64(1), h.committed(p0))

	h.dlq.deliver(1, nil)
	h.tick()
	assert.Equal(t, int64(3), h.committed(p0))
	assert.Equal(t, int64(2), h.p.counters.snapshot().DeadLetterFailures)
}

// Each dead letter is logged at DEBUG; a tick logs one INFO summary of those since the last,
// by topic and error class, and none when there were none; a revocation summarizes the
// partitions it gives up.
func TestDeadLettersAreSummarizedPerTick(t *testing.T) {
	h := newHarness(t, nil)
	p0, p1, u0 := tp("t", 0), tp("t", 1), tp("u", 0)
	for _, p := range []ledger.TopicPartition{p0, p1, u0} {
		h.assign(p, -1, "")
	}
	h.feed(p0, 0, "x a", "s 1", "x b", "nan 2")
	h.feed(p1, 0, "x c")
	h.feed(u0, 0, "nan 3")
	h.tick()
	logs := h.logs.String()
	assert.Equal(t, 5, strings.Count(logs, "level=DEBUG msg=\"message dead-lettered\""), logs)
	assert.NotContains(t, logs, "level=INFO msg=\"message dead-lettered\"")
	summary := "level=INFO msg=\"messages dead-lettered since the last summary\" count=5 " +
		"by_class.t.consumer.invalid-event=1 by_class.t.test.decode=3 by_class.u.consumer.invalid-event=1"
	assert.Equal(t, 1, strings.Count(logs, summary), logs)
	h.tick()
	assert.Equal(t, 1, strings.Count(h.logs.String(), "messages dead-lettered since"), "nothing new, no summary")

	h.feed(p1, 1, "x d")
	h.p.revoke(h.ctx, []ledger.TopicPartition{p1}, false, CommitRevoke)
	assert.Contains(t, h.logs.String(), "messages dead-lettered since the last summary\" count=1 by_class.t.test.decode=1")
}

func TestStaleDeadLetterReportIsIgnoredAfterReassignment(t *testing.T) {
	h := newHarness(t, nil)
	p0 := tp("t", 0)
	h.assign(p0, -1, "")
	h.feed(p0, 0, "x")
	h.p.revoke(context.Background(), []ledger.TopicPartition{p0}, false, CommitRevoke)
	h.assign(p0, -1, "")
	h.feed(p0, 0, "x")
	require.Equal(t, 2, h.dlq.count())

	h.dlq.deliver(0, nil) // the first assignment's letter
	h.tick()
	assert.Equal(t, int64(-1), h.committed(p0), "a report for a ledger that is gone acks nothing")
	h.dlq.deliver(1, nil)
	h.tick()
	assert.Equal(t, int64(1), h.committed(p0))
}

func TestRevokeWritesCommitsTheDurablePrefixAndDrops(t *testing.T) {
	var revokes []RevokeInfo
	h := newHarness(t, func(c *Config[string]) {
		c.Hooks = append(c.Hooks, revokeHook(func(r RevokeInfo) { revokes = append(revokes, r) }))
	})
	p0, p1 := tp("t", 0), tp("t", 1)
	h.assign(p0, -1, "")
	h.assign(p1, -1, "")
	h.feed(p0, 0, stream...)
	h.feed(p1, 0, "s 1", "w 1 A 1")
	// No tick: the revocation itself flushes, writes the closed windows and commits.
	h.p.revoke(context.Background(), []ledger.TopicPartition{p0}, false, CommitRevoke)
	assert.Equal(t, int64(4), h.committed(p0))
	assert.Equal(t, at("7"), h.checkpoint(p0))
	assert.Equal(t, int64(-1), h.committed(p1), "only the revoked partitions are committed")
	require.Len(t, revokes, 1)
	assert.Equal(t, RevokeInfo{TopicPartition: p0, Dropped: 4}, revokes[0])
	assert.NotContains(t, h.p.parts, p0)
	assert.Nil(t, h.p.tracker.Partition(p0))

	// A message of the revoked partition still in flight is not decided.
	h.feed(p0, 8, "w 30 A 1")
	assert.NotContains(t, h.chk.decisionsOf(p0), int64(8))

	// Lost: nothing written, nothing committed.
	h.feed(p1, 2, "w 20 A 1")
	closes := len(h.closes())
	commits := len(h.cl.commits)
	h.p.revoke(context.Background(), []ledger.TopicPartition{p1}, true, CommitRevoke)
	assert.Len(t, h.closes(), closes)
	assert.Len(t, h.cl.commits, commits)
	assert.True(t, revokes[1].Lost)
	assert.Empty(t, h.p.parts)
}

type revokeHook func(RevokeInfo)

func (f revokeHook) OnRevoke(r RevokeInfo) { f(r) }

func TestRevokeWhoseWriteFailsCommitsOnlyWhatWasDurable(t *testing.T) {
	h := newHarness(t, nil)
	p0 := tp("t", 0)
	h.assign(p0, -1, "")
	h.feed(p0, 0, "w 1 A 1", "w 7 A 2")
	h.tick() // writes [12:00,12:05): offset 0 durable
	require.Equal(t, int64(1), h.committed(p0))
	h.feed(p0, 2, "w 13 A 3") // closes [12:05,12:10)
	h.mem.FailNext(errors.New("down"))
	h.p.revoke(context.Background(), []ledger.TopicPartition{p0}, false, CommitRevoke)
	assert.Equal(t, int64(1), h.committed(p0), "the window of offset 1 was not written")
	assert.Empty(t, h.p.parts)
}

func TestCommitFailureIsRetriedAtTheNextTick(t *testing.T) {
	h := newHarness(t, nil)
	p0 := tp("t", 0)
	h.assign(p0, -1, "")
	h.feed(p0, 0, "s 1")
	h.cl.failNext = []error{kafka.NewError(kafka.ErrRebalanceInProgress, "rebalance", false), errors.New("broker down")}
	h.tick()
	h.tick()
	assert.Equal(t, int64(-1), h.committed(p0))
	h.tick()
	assert.Equal(t, int64(1), h.committed(p0))
	require.Len(t, h.cl.commits, 3, "the same commit, three times")
	for _, c := range h.cl.commits {
		assert.Equal(t, kafka.Offset(1), c[0].Offset)
	}
	assert.Equal(t, int64(2), h.p.counters.snapshot().CommitFailures)
	h.tick()
	assert.Len(t, h.cl.commits, 3, "nothing moved, nothing sent")
}

// The write backlog past a quarter of the buffer budget: a tick runs at once; while its writes
// are in flight the loop waits for them rather than pausing the partitions (a pause would drop
// what the client fetched); once they are done the backlog is gone.
func TestBufferBoundOnTheWriteBacklog(t *testing.T) {
	h, p0, p1 := backlogPastAQuarter(t)
	assert.Empty(t, h.mem.Upserts(), "nothing written yet")

	h.p.checkBuffer(h.ctx)
	assert.Nil(t, h.p.job, "the loop waited for the writes and applied them")
	assert.NotEmpty(t, h.mem.Upserts(), "the rows written")
	_, backlog := h.p.buffered()
	assert.Zero(t, backlog, "written and dropped")
	assert.False(t, h.cl.paused[p0] || h.cl.paused[p1], "no partition paused: the client keeps its prefetch")
	assert.Equal(t, int64(12), h.committed(p0))
}

// backlogPastAQuarter returns a harness whose two partitions decided state rows past a quarter
// of its buffer budget, so that checkBuffer ran a tick at once, whose writes wait to be run.
func backlogPastAQuarter(t *testing.T) (h *harness, p0, p1 ledger.TopicPartition) {
	t.Helper()
	h = newHarness(t, nil)
	h.p.s.buffer = 8 << 10 // a quarter: 2 KiB, about ten state rows
	h.deferWrites()
	p0, p1 = tp("t", 0), tp("t", 1)
	h.assign(p0, -1, "")
	h.assign(p1, -1, "")
	for i := range int64(12) {
		h.feed(p0, i, fmt.Sprintf("s 0:%02d", i))
	}
	_, backlog := h.p.buffered()
	require.Greater(t, backlog, int64(2<<10))
	h.p.checkBuffer(h.ctx)
	require.NotNil(t, h.p.job, "a tick ran at once and started writing the rows")
	return h, p0, p1
}

// Writes that fail while the loop waits for them leave the backlog past its quarter: every
// partition is paused, so that the backlog does not grow between attempts, until a write
// succeeds.
func TestBufferBoundPausesWhileWritesFail(t *testing.T) {
	h, p0, p1 := backlogPastAQuarter(t)
	h.mem.FailNext(errors.New("down"))
	h.p.checkBuffer(h.ctx)
	require.Nil(t, h.p.job, "the loop waited for the writes")
	_, backlog := h.p.buffered()
	require.Greater(t, backlog, int64(2<<10), "the rows wait for the next write")
	assert.True(t, h.cl.paused[p0] && h.cl.paused[p1], "every partition paused while the writes fail")
	assert.Equal(t, int64(-1), h.committed(p0))

	h.tick()
	h.p.await(h.ctx)
	h.p.checkBuffer(h.ctx)
	assert.False(t, h.cl.paused[p0] || h.cl.paused[p1], "fetching again once a write succeeded")
	h.tick()
	assert.Equal(t, int64(12), h.committed(p0))
}

// A write backlog past a quarter of the budget that no tick can write, dead letters waiting
// for their delivery reports, pauses every partition until the reports bring it back under
// resumeAt of that quarter.
func TestBufferBoundOnDeadLettersPauses(t *testing.T) {
	h := newHarness(t, nil)
	h.p.s.buffer = 8 << 10
	p0, p1 := tp("t", 0), tp("t", 1)
	h.assign(p0, -1, "")
	h.assign(p1, -1, "")
	bad := strings.Repeat("x bad ", 64)
	for i := range int64(12) {
		h.feed(p0, i, bad)
	}
	_, backlog := h.p.buffered()
	require.Greater(t, backlog, int64(2<<10), "the letters alone pass a quarter")
	h.p.checkBuffer(h.ctx) // a tick at once, which writes nothing of it
	h.p.checkBuffer(h.ctx)
	assert.True(t, h.cl.paused[p0] && h.cl.paused[p1], "every partition paused")

	for i := range h.dlq.count() {
		h.dlq.deliver(i, nil)
	}
	h.tick()
	h.p.checkBuffer(h.ctx)
	assert.False(t, h.cl.paused[p0] || h.cl.paused[p1], "fetching again once the reports came")
	assert.Equal(t, int64(12), h.committed(p0))
}

// Open windows past what the budget leaves beside the backlog pause the partitions holding the
// most, as long as the paused ones hold at most the low-water mark: a partition that alone
// holds more is never paused. They resume at a later tick at which the windows are back under
// the bound.
func TestBufferBoundOnOpenWindows(t *testing.T) {
	h := newHarness(t, nil)
	p0, p1 := tp("t", 0), tp("t", 1)
	h.assign(p0, -1, "")
	h.assign(p1, -1, "")
	keys := func(pt ledger.TopicPartition, first int64, n int, minute int) {
		for i := range n {
			h.feed(pt, first+int64(i), fmt.Sprintf("w %d K%d 1", minute, i))
		}
	}
	keys(p0, 0, 10, 1) // 11 keys (all included)
	keys(p1, 0, 30, 1) // 31 keys
	keys(p1, 30, 1, 6) // a later window: wm 6:00-2:00, nothing closed yet
	w0, w1 := h.p.parts[p0].winBytes.Load(), h.p.parts[p1].winBytes.Load()
	require.Greater(t, w1, 2*w0)
	// The bound sits below what both together count against it, and its low-water mark (half
	// of both) between them.
	h.p.s.buffer = 2 * windowCharge(w0+w1) / 3
	h.p.s.resumeAt = 0.75
	h.tick()
	assert.True(t, h.cl.paused[p0], "the smaller one fits under the low-water mark: paused")
	assert.False(t, h.cl.paused[p1], "the larger one alone passes the low-water mark: never paused")

	h.feed(p1, 31, "w 12 C 1") // wm 10:00 closes p1's windows
	h.tick()
	assert.False(t, h.cl.paused[p0], "back under the bound at a later tick: resumed")
}

// A partition paused for the open windows resumes at a tick before which the running
// partitions decided nothing: their windows may never close, and waiting for them would stall
// the consumer.
func TestWindowsPauseEndsWhenTheOthersStall(t *testing.T) {
	h := newHarness(t, nil)
	p0, p1 := tp("t", 0), tp("t", 1)
	h.assign(p0, -1, "")
	h.assign(p1, -1, "")
	for i := range 10 {
		h.feed(p0, int64(i), fmt.Sprintf("w 1 K%d 1", i))
	}
	for i := range 30 {
		h.feed(p1, int64(i), fmt.Sprintf("w 1 K%d 1", i))
	}
	w0, w1 := h.p.parts[p0].winBytes.Load(), h.p.parts[p1].winBytes.Load()
	h.p.s.buffer = 2 * windowCharge(w0+w1) / 3
	h.p.s.resumeAt = 0.75
	h.tick()
	require.True(t, h.cl.paused[p0], "paused for the open windows")
	h.tick()
	assert.False(t, h.cl.paused[p0], "nothing decided since the last tick: resumed")
	h.feed(p1, 30, "w 1 K30 1")
	h.tick()
	assert.True(t, h.cl.paused[p0], "paused again once the others move while over the bound")
}

func TestMessagesOfUnknownPartitionsAndDuplicatesAreIgnored(t *testing.T) {
	h := newHarness(t, nil)
	p0 := tp("t", 0)
	h.feed(p0, 0, "w 1 A 1")
	assert.Zero(t, h.p.counters.snapshot().Consumed)
	h.assign(p0, -1, "")
	h.feed(p0, 0, "w 1 A 1", "w 2 A 1")
	h.feed(p0, 1, "w 2 A 1") // delivered again after a seek
	assert.Equal(t, int64(2), h.p.counters.snapshot().Consumed)
}

func TestUndecodableWithoutDeadLettersStops(t *testing.T) {
	h := newHarness(t, func(c *Config[string]) { c.DeadLetters = nil })
	p0 := tp("t", 0)
	h.assign(p0, -1, "")
	h.p.handle(message(p0, 0, "s 1"))
	h.p.handle(message(p0, 1, "x"))
	require.ErrorIs(t, h.p.fatal(), ErrUndecodable)
	h.p.tick(context.Background(), CommitTick)
	assert.Equal(t, int64(-1), h.committed(p0), "nothing is committed after a fatal error")
	assert.Equal(t, int64(1), h.p.counters.snapshot().Consumed)
}

func TestKeysMappingToOneRowAreMerged(t *testing.T) {
	h := newHarness(t, func(c *Config[string]) {
		c.Series = func(string) sink.Series { return sink.Series{Dimension: "network", DimensionID: "all"} }
	})
	p0 := tp("t", 0)
	h.assign(p0, -1, "")
	h.feed(p0, 0, "w 1 A 1", "w 2 B 3", "w 9 A 0")
	h.tick()
	a, ok, err := h.mem.Aggregate(context.Background(), sink.Key{WindowStart: T0, Dimension: "network", DimensionID: "all"})
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, int64(4), a.Count, "A, all, B, all: four values under one row")
	assert.Equal(t, 2.0, a.Mean)
}

func TestCommitErrorsOfARebalanceAreExpected(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{kafka.NewError(kafka.ErrState, "", false), true},
		{kafka.NewError(kafka.ErrRebalanceInProgress, "", false), true},
		{kafka.NewError(kafka.ErrNoOffset, "", false), true},
		{kafka.NewError(kafka.ErrIllegalGeneration, "", false), true},
		{kafka.NewError(kafka.ErrUnknownMemberID, "", false), true},
		{fmt.Errorf("wrapped: %w", kafka.NewError(kafka.ErrRebalanceInProgress, "", false)), true},
		{kafka.NewError(kafka.ErrRequestTimedOut, "", false), false},
		{errors.New("other"), false},
	} {
		assert.Equal(t, tc.want, expectedCommitError(tc.err), "%v", tc.err)
	}
}

// An early tick when the client has nothing at hand: only after new decisions, only once the
// interval since the last tick has passed, never while writes are in flight, and off by default.
func TestCaughtUpTick(t *testing.T) {
	hook := &tickRecorder{}
	h := newHarness(t, func(c *Config[string]) {
		c.FlushWhenCaughtUp = 200 * time.Millisecond
		c.Hooks = append(c.Hooks, hook)
	})
	h.p.now = h.clock.Now
	p0 := tp("t", 0)
	h.assign(p0, -1, "")
	h.tick() // the last tick began at T0
	ctx := context.Background()

	h.feed(p0, 0, "s 1", "s 2")
	h.clock.Advance(100 * time.Millisecond)
	h.p.caughtUp(ctx)
	assert.Equal(t, int64(-1), h.committed(p0), "too soon after the last tick")

	h.clock.Advance(100 * time.Millisecond)
	h.p.caughtUp(ctx)
	assert.Equal(t, int64(2), h.committed(p0), "the state was flushed and committed at once")
	assert.Equal(t, []CommitReason{CommitCaughtUp}, hook.reasons, "the first tick had nothing to commit")
	assert.Equal(t, []bool{false, true}, hook.caughtUp)

	h.clock.Advance(time.Second)
	h.p.caughtUp(ctx)
	assert.Len(t, hook.caughtUp, 2, "nothing decided since: no tick")

	// Writes in flight: the caught-up tick neither runs nor waits for them.
	var run func()
	h.p.spawn = func(f func()) { run = f }
	h.feed(p0, 2, "s 3")
	h.tick()
	require.NotNil(t, run)
	h.feed(p0, 3, "s 4")
	h.clock.Advance(time.Second)
	h.p.caughtUp(ctx)
	assert.Len(t, hook.caughtUp, 3, "only the ordinary tick that started the writes")
	assert.False(t, h.p.tickDue)
	run()
	h.p.poll(ctx)
	assert.Equal(t, int64(3), h.committed(p0), "the writes' completion committed what they cover")
	h.p.spawn = func(f func()) { f() }
	h.p.caughtUp(ctx)
	assert.Equal(t, int64(4), h.committed(p0), "and the next caught-up poll ticks for the rest")

	off := newHarness(t, func(c *Config[string]) { c.FlushWhenCaughtUp = -1 })
	off.p.now = off.clock.Now
	off.assign(p0, -1, "")
	off.feed(p0, 0, "s 1")
	off.clock.Advance(time.Hour)
	off.p.caughtUp(ctx)
	assert.Equal(t, int64(-1), off.committed(p0), "FlushWhenCaughtUp negative: ticks only every FlushInterval")
}

// tickRecorder records the ticks and the reasons of the commits.
type tickRecorder struct {
	reasons  []CommitReason
	caughtUp []bool
	waited   []time.Duration
}

func (r *tickRecorder) OnCommit(i CommitInfo) { r.reasons = append(r.reasons, i.Reason) }
func (r *tickRecorder) OnTick(i TickInfo) {
	r.caughtUp = append(r.caughtUp, i.CaughtUp)
	r.waited = append(r.waited, i.Waited)
}
