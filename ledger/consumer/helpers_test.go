package consumer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/sinktest"
)

// T0 starts a 5-minute window; test payloads give event times in seconds after it.
var T0 = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

// at returns T0 plus minutes and seconds written as "m:ss" or "m".
func at(s string) time.Time {
	m, sec, _ := strings.Cut(s, ":")
	mi, err := strconv.Atoi(m)
	if err != nil {
		panic(err)
	}
	si := 0
	if sec != "" {
		if si, err = strconv.Atoi(sec); err != nil {
			panic(err)
		}
	}
	return T0.Add(time.Duration(mi)*time.Minute + time.Duration(si)*time.Second)
}

// Test payloads, space separated:
//
//	w <m:ss> <key> <value>    a window value under key and under "all"
//	s <m:ss>                  a state row keyed by the message's own topic/partition/offset
//	ws <m:ss> <key> <value>   both
//	k <m:ss> <key>            a state row as s does, and one of the shared key, valued by the
//	                          message's offset (the state buffer keeps one row per key)
//	c <m:ss>                  an event time only (moves the watermark, applies nothing)
//	x <anything>              fails to decode
//	nan <m:ss>                decodes to an invalid event (a NaN value)
func testHandler(m *kafka.Message) (Event[string], error) {
	f := strings.Fields(string(m.Value))
	if len(f) == 0 {
		return Event[string]{}, errors.New("empty payload")
	}
	var ev Event[string]
	switch f[0] {
	case "x":
		return ev, &decodeError{payload: string(m.Value)}
	case "nan":
		return Event[string]{Time: at(f[1]), Values: []Value[string]{{Value: nan(), Keys: []string{"a"}}}}, nil
	case "c":
		ev.Time = at(f[1])
	case "k":
		ev.Time = at(f[1])
		shared := sink.StateRow{Table: sinkfixture.StateTable, Key: []any{"shared/" + f[2]}, ObservedAt: ev.Time,
			Values: []any{"shared", 0.5, int64(m.TopicPartition.Offset)}}
		ev.State = []sink.StateRow{stateRow(m, ev.Time), shared}
	case "w", "s", "ws":
		ev.Time = at(f[1])
		if f[0] != "s" {
			v, err := strconv.ParseFloat(f[3], 64)
			if err != nil {
				return ev, err
			}
			ev.Values = []Value[string]{{Value: v, Keys: []string{f[2], "all"}}}
		}
		if f[0] != "w" {
			ev.State = []sink.StateRow{stateRow(m, ev.Time)}
		}
	default:
		return ev, &decodeError{payload: string(m.Value)}
	}
	return ev, nil
}

func nan() float64 { z := 0.0; return z / z }

type decodeError struct{ payload string }

func (e *decodeError) Error() string      { return fmt.Sprintf("cannot decode %q", e.payload) }
func (e *decodeError) ErrorClass() string { return "test.decode" }

func stateKey(topic string, partition int32, offset int64) string {
	return fmt.Sprintf("%s/%d/%d", topic, partition, offset)
}

func stateRow(m *kafka.Message, t time.Time) sink.StateRow {
	return sink.StateRow{
		Table:      sinkfixture.StateTable,
		Key:        []any{stateKey(*m.TopicPartition.Topic, m.TopicPartition.Partition, int64(m.TopicPartition.Offset))},
		ObservedAt: t,
		Values:     []any{"trip", 1.5, int64(3)},
	}
}

func testKeys(k string) sink.Series {
	if k == "all" {
		return sink.Series{Dimension: "network", DimensionID: "all"}
	}
	return sink.Series{Dimension: "line", DimensionID: k, Attrs: map[string]string{"owner": "op-" + k}}
}

func newMemory(t testing.TB) *sinktest.Memory {
	t.Helper()
	m, err := sinktest.NewMemory(sinktest.MemoryConfig{
		Aggregates: sinkfixture.Aggregates(),
		States:     []sink.StateSpec{sinkfixture.Latest()},
		Clock:      sinkfixture.Now,
	})
	require.NoError(t, err)
	return m
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock(t time.Time) *fakeClock { return &fakeClock{now: t} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// fakeClient records what the processor asks of Kafka.
type fakeClient struct {
	mu        sync.Mutex
	commits   [][]kafka.TopicPartition // every commit request, accepted or not
	failNext  []error
	committed map[ledger.TopicPartition]kafka.TopicPartition
	paused    map[ledger.TopicPartition]bool
	seeks     []kafka.TopicPartition
	high      map[ledger.TopicPartition]int64
	hold      chan struct{} // when set, a commit waits until it is closed, as one to a restarting broker does
}

func newFakeClient() *fakeClient {
	return &fakeClient{
		committed: map[ledger.TopicPartition]kafka.TopicPartition{},
		paused:    map[ledger.TopicPartition]bool{},
		high:      map[ledger.TopicPartition]int64{},
	}
}

func ltp(tp kafka.TopicPartition) ledger.TopicPartition {
	return ledger.TopicPartition{Topic: *tp.Topic, Partition: tp.Partition}
}

func (f *fakeClient) CommitOffsets(offsets []kafka.TopicPartition) ([]kafka.TopicPartition, error) {
	f.mu.Lock()
	f.commits = append(f.commits, slices.Clone(offsets))
	hold := f.hold
	f.mu.Unlock()
	if hold != nil {
		<-hold
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.failNext) > 0 {
		err := f.failNext[0]
		f.failNext = f.failNext[1:]
		return nil, err
	}
	for _, o := range offsets {
		f.committed[ltp(o)] = o
	}
	return offsets, nil
}

func (f *fakeClient) Pause(ps []kafka.TopicPartition) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range ps {
		f.paused[ltp(p)] = true
	}
	return nil
}

func (f *fakeClient) Resume(ps []kafka.TopicPartition) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range ps {
		delete(f.paused, ltp(p))
	}
	return nil
}

func (f *fakeClient) Seek(p kafka.TopicPartition, _ int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seeks = append(f.seeks, p)
	return nil
}

func (f *fakeClient) GetWatermarkOffsets(topic string, partition int32) (int64, int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	hi, ok := f.high[ledger.TopicPartition{Topic: topic, Partition: partition}]
	if !ok {
		return -1, -1, nil
	}
	return -1, hi, nil
}

func (f *fakeClient) Position(ps []kafka.TopicPartition) ([]kafka.TopicPartition, error) {
	out := slices.Clone(ps)
	for i := range out {
		out[i].Offset = kafka.OffsetInvalid
	}
	return out, nil
}

// committedAt returns the committed offset and metadata of tp, -1 if none.
func (f *fakeClient) committedAt(tp ledger.TopicPartition) (int64, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.committed[tp]
	if !ok {
		return -1, ""
	}
	md := ""
	if c.Metadata != nil {
		md = *c.Metadata
	}
	return int64(c.Offset), md
}

// fakeDLQ records dead letters; the test delivers them.
type fakeDLQ struct {
	mu       sync.Mutex
	sent     []sentLetter
	failSend []error
}

type sentLetter struct {
	rec   dlq.Record
	cause error
	done  func(error)
}

func (f *fakeDLQ) Send(_ context.Context, rec dlq.Record, cause error, done func(error)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.failSend) > 0 {
		err := f.failSend[0]
		f.failSend = f.failSend[1:]
		return err
	}
	f.sent = append(f.sent, sentLetter{rec: rec, cause: cause, done: done})
	return nil
}

// deliver reports letter i with err, from another goroutine as the producer would.
func (f *fakeDLQ) deliver(i int, err error) {
	f.mu.Lock()
	l := f.sent[i]
	f.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.done(err)
	}()
	<-done
}

func (f *fakeDLQ) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sent)
}

// checker is a hook that verifies G2 at every commit: every message below the committed
// offset, since the partition was assigned, was decided by this consumer and is durable:
// its window written (the sink's closed_through reaches its end), its state row stored, its
// dead letter confirmed, or late. It also keeps each decision for comparisons between runs.
type checker struct {
	mu        sync.Mutex
	sink      sink.Sink
	reader    *sinktest.Memory
	from      map[ledger.TopicPartition]int64
	decided   map[ledger.TopicPartition]map[int64]MessageInfo
	delivered map[ledger.TopicPartition]map[int64]bool
	lost      []LostInfo    // every lost range reported, in order
	history   []MessageInfo // every decision, in order
	assigns   []AssignInfo
	commits   []CommitInfo
	checked   int // commits verified
	problems  []string
}

func newChecker(mem *sinktest.Memory) *checker {
	return &checker{
		sink: mem, reader: mem,
		from:      map[ledger.TopicPartition]int64{},
		decided:   map[ledger.TopicPartition]map[int64]MessageInfo{},
		delivered: map[ledger.TopicPartition]map[int64]bool{},
	}
}

func (c *checker) OnAssign(a AssignInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.from[a.TopicPartition] = max(a.Committed, 0)
	c.decided[a.TopicPartition] = map[int64]MessageInfo{}
	c.delivered[a.TopicPartition] = map[int64]bool{}
	c.assigns = append(c.assigns, a)
}

func (c *checker) OnMessage(m MessageInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.decided[m.TopicPartition] == nil {
		c.problems = append(c.problems, fmt.Sprintf("%v@%d decided without an assignment", m.TopicPartition, m.Offset))
		return
	}
	c.decided[m.TopicPartition][m.Offset] = m
	c.history = append(c.history, m)
}

func (c *checker) OnLost(l LostInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lost = append(c.lost, l)
}

// lostAt returns the lost range of tp holding off, if one was reported.
func (c *checker) lostAt(tp ledger.TopicPartition, off int64) (LostInfo, bool) {
	for _, l := range c.lost {
		if l.TopicPartition == tp && off >= l.From && off < l.To {
			return l, true
		}
	}
	return LostInfo{}, false
}

// lostRanges returns the lost ranges reported.
func (c *checker) lostRanges() []LostInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.lost)
}

func (c *checker) OnDeadLetter(d DeadLetterInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d.Err == nil && c.delivered[d.TopicPartition] != nil {
		c.delivered[d.TopicPartition][d.Offset] = true
	}
}

func (c *checker) OnCommit(ci CommitInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ci.Commits = slices.Clone(ci.Commits)
	ci.Failed = slices.Clone(ci.Failed)
	c.commits = append(c.commits, ci)
	ctx := context.Background()
	for _, cm := range ci.Commits {
		if slices.Contains(ci.Failed, cm) {
			continue
		}
		tp := cm.TopicPartition
		progress, err := c.sink.ClosedThrough(ctx, tp)
		if err != nil {
			c.problems = append(c.problems, err.Error())
			continue
		}
		ct, hasCT := progress[tp]
		for off := c.from[tp]; off < cm.Offset; off++ {
			d, ok := c.decided[tp][off]
			if l, lost := c.lostAt(tp, off); !ok && lost {
				if !c.delivered[tp][l.To-1] {
					c.problems = append(c.problems, fmt.Sprintf("commit %v@%d passes lost offset %d, its dead letter not confirmed", tp, cm.Offset, off))
				}
				continue
			}
			if !ok {
				c.problems = append(c.problems, fmt.Sprintf("commit %v@%d passes offset %d, never decided", tp, cm.Offset, off))
				continue
			}
			switch d.Decision {
			case Late:
			case DeadLettered:
				if !c.delivered[tp][off] {
					c.problems = append(c.problems, fmt.Sprintf("commit %v@%d passes dead letter %d, not confirmed", tp, cm.Offset, off))
				}
			case Admitted:
				if !d.WindowEnd.IsZero() && (!hasCT || ct.Before(d.WindowEnd)) {
					c.problems = append(c.problems, fmt.Sprintf("commit %v@%d passes offset %d of window ending %v, closed_through %v",
						tp, cm.Offset, off, d.WindowEnd, ct))
				}
				if d.State > 0 {
					if _, ok, _ := c.reader.Latest(ctx, sinkfixture.StateTable, stateKey(tp.Topic, tp.Partition, off)); !ok {
						c.problems = append(c.problems, fmt.Sprintf("commit %v@%d passes offset %d whose state row is not stored", tp, cm.Offset, off))
					}
				}
			}
		}
		c.from[tp] = max(c.from[tp], cm.Offset)
		c.checked++
	}
}

func (c *checker) verify(t testing.TB) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	require.Empty(t, c.problems, "G2 violations")
}

func (c *checker) checkedCommits() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.checked
}

// decisionsOf returns the last decision per offset of tp.
func (c *checker) decisionsOf(tp ledger.TopicPartition) map[int64]Decision {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[int64]Decision{}
	for _, m := range c.history {
		if m.TopicPartition == tp {
			out[m.Offset] = m.Decision
		}
	}
	return out
}

func (c *checker) lastAssign(tp ledger.TopicPartition) (AssignInfo, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.assigns) - 1; i >= 0; i-- {
		if c.assigns[i].TopicPartition == tp {
			return c.assigns[i], true
		}
	}
	return AssignInfo{}, false
}

// syncBuffer is a log destination safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testLogger(w *syncBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// aggregates returns every merged row of the sink over the windows starting in [from, to).
func aggregates(t testing.TB, m *sinktest.Memory, from, to time.Time) []sink.Aggregate {
	t.Helper()
	var out []sink.Aggregate
	for w := from; w.Before(to); w = w.Add(5 * time.Minute) {
		rows, err := m.Aggregates(context.Background(), w)
		require.NoError(t, err)
		for i := range rows {
			rows[i].ComputedAt = time.Time{}
			rows[i].Complete = false
		}
		out = append(out, rows...)
	}
	return out
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestLogTime(t *testing.T) {
	assert.Equal(t, "none", logTime(time.Time{}).String())
	assert.Equal(t, T0, logTime(T0).Time())
}
