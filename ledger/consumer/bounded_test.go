package consumer

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/kafkatest"
	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/sink"
)

func TestUntilValidation(t *testing.T) {
	tp0 := ledger.TopicPartition{Topic: "t", Partition: 0}
	reset := kafka.ConfigMap{"auto.offset.reset": "earliest"}
	for _, tc := range []struct {
		name  string
		until Until
		kafka kafka.ConfigMap
		want  string
	}{
		{"two fields", Until{End: true, Time: T0}, reset, "Until: expected at most one of End, Time and Offsets, found 2"},
		{"negative offset", Until{Offsets: map[ledger.TopicPartition]int64{tp0: -1}}, reset, "Until.Offsets: t[0]: expected an offset >= 0, found -1"},
		{"no reset policy", Until{End: true}, nil, "Until: a bounded run needs auto.offset.reset in Kafka"},
		{"unbounded, no reset policy", Until{}, nil, ""},
		{"reset policy of the topics", Until{Time: T0}, kafka.ConfigMap{"default.topic.config": kafka.ConfigMap{"auto.offset.reset": "latest"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			km := kafka.ConfigMap{"bootstrap.servers": "unused:9092", "group.id": "g"}
			for k, v := range tc.kafka {
				km[k] = v
			}
			_, err := New(Config[string]{
				Kafka:  km,
				Topics: map[string]Handler[string]{"t": testHandler}, Sink: newMemory(t), Series: testKeys,
				Until: tc.until,
			})
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrConfig)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// A partition that reaches its stop offset decides nothing at or past it, and the next ticks
// close its windows with the end-of-input watermark, one window a tick up to the end of its
// last window holding data: every window written, the ledger committable through the stop,
// the watermark of that end in the commit's metadata.
func TestBoundedPartitionClosesAtItsStop(t *testing.T) {
	h := newHarness(t, func(c *Config[string]) { c.Until = Until{End: true} })
	p0 := tp("t", 0)
	ctx := h.ctx
	require.NoError(t, h.p.assign(ctx, []assignment{{tp: p0, committed: -1, stop: 3}}, nil))
	h.p.assignedOnce = true
	h.feed(p0, 0, "w 1 A 1", "w 6 A 2", "ws 11 B 3", "w 30 A 4", "w 31 A 5")
	assert.Equal(t, []Decision{Admitted, Admitted, Admitted, 0, 0}, h.outcomes(p0, 5), "nothing at or past the stop")
	assert.True(t, h.cl.paused[p0], "fetches nothing more")
	assert.False(t, h.p.boundedDone(), "not written yet")

	// The watermark (09) closes the first window anyway: the first step takes it to 10.
	for i, end := range []string{"10", "15"} {
		assert.False(t, h.p.boundedDone(), "window %d not written yet", i)
		assert.True(t, h.p.endedSinceTick, "the stop, then a step of the end of input, asks for a tick")
		h.tick()
		assert.Equal(t, at(end), progress(t, h.mem, "t", 1)[0], "one window a tick")
		assert.Len(t, aggregates(t, h.mem, T0, at("60")), 4+2*i, "two keys a window")
	}
	assert.Equal(t, int64(3), h.committed(p0))
	assert.Equal(t, at("15"), h.checkpoint(p0), "the end of the last window holding data")
	assert.True(t, h.p.endedSinceTick, "its windows closed: a tick resolves the input's end")
	assert.False(t, h.p.boundedDone())
	h.tick()
	assert.Equal(t, at("15"), progress(t, h.mem, "t", 1)[0], "the input ends with its last window")
	assert.False(t, h.p.endedSinceTick)
	assert.True(t, h.p.boundedDone())
}

// A partition assigned at or past its stop is done at the next tick, with nothing decided.
func TestBoundedPartitionAssignedAtItsStop(t *testing.T) {
	h := newHarness(t, func(c *Config[string]) { c.Until = Until{End: true} })
	p0 := tp("t", 0)
	require.NoError(t, h.p.assign(h.ctx, []assignment{{tp: p0, committed: 4, stop: 4}}, nil))
	h.p.assignedOnce = true
	assert.False(t, h.p.boundedDone())
	h.tick()
	assert.False(t, h.p.boundedDone(), "the input's end is resolved at the next tick")
	h.tick()
	assert.True(t, h.p.boundedDone())
	assert.Zero(t, h.p.counters.snapshot().Consumed)
}

// With the real client and broker: a bounded run returns nil by itself once every partition is
// written and committed through its end; it stores the rows an unbounded run stores (whose last
// windows close by the idle advance); and a later run of the same group decides events of the
// windows the first one closed as late and admits later ones.
func TestKafkaBoundedRunEqualsTheUnboundedOne(t *testing.T) {
	const partitions = 2
	rng := rand.New(rand.NewPCG(3, 4))
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"bd": partitions, "ub": partitions}})
	payloads := generate(rng, partitions, 60, 0)
	bdRecs, ubRecs := records("bd", payloads), records("ub", payloads)
	c.Produce(t, append(bdRecs, ubRecs...)...)

	bounded := newMemory(t)
	in := start(t, "bounded", clientConfig(c, "gbd", ""), bounded, []string{"bd"}, func(cfg *Config[string]) {
		cfg.Until = Until{End: true}
	})
	select {
	case err := <-in.done:
		in.ended, in.result = true, err
		require.NoError(t, err)
	case <-time.After(kafkatest.Timeout):
		t.Fatal("the bounded run did not return")
	}
	in.chk.verify(t)
	ends := lastOffsets(bdRecs)
	for p, co := range c.Committed(t, "gbd", "bd") {
		assert.Equal(t, ends[ledger.TopicPartition{Topic: "bd", Partition: p}]+1, co.Offset, "partition %d committed through its end", p)
	}

	// The unbounded reference closes its last windows by the idle advance, a day later.
	unbounded := newMemory(t)
	var skew atomic.Int64
	ref := start(t, "unbounded", clientConfig(c, "gub", ""), unbounded, []string{"ub"}, func(cfg *Config[string]) {
		cfg.IdleTimeout = 10 * time.Millisecond
		cfg.Clock = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	})
	waitDecided(t, lastOffsets(ubRecs), ref)
	skew.Store(int64(24 * time.Hour))
	eventually(t, "the unbounded run wrote its last windows", func() bool {
		return len(aggregates(t, unbounded, T0.Add(-time.Hour), T0.Add(3*time.Hour))) ==
			len(aggregates(t, bounded, T0.Add(-time.Hour), T0.Add(3*time.Hour)))
	})
	require.NoError(t, ref.stop(t))
	require.NotEmpty(t, aggregates(t, bounded, T0.Add(-time.Hour), T0.Add(3*time.Hour)))
	assert.Equal(t, aggregates(t, bounded, T0.Add(-time.Hour), T0.Add(3*time.Hour)),
		aggregates(t, unbounded, T0.Add(-time.Hour), T0.Add(3*time.Hour)), "the same merged rows")

	// A later run of the same group: events of written windows are late, later ones admitted.
	closed := progress(t, bounded, "bd", partitions)
	more := [][]string{{"w 1 A 7", "w 500 A 8"}, {"w 2 B 9", "w 501 B 10"}}
	c.Produce(t, records("bd", more)...)
	again := start(t, "again", clientConfig(c, "gbd", ""), bounded, []string{"bd"}, func(cfg *Config[string]) {
		cfg.Until = Until{End: true}
	})
	require.NoError(t, <-again.done)
	again.ended = true
	for p := range int32(partitions) {
		tp := ledger.TopicPartition{Topic: "bd", Partition: p}
		ai, ok := again.chk.lastAssign(tp)
		require.True(t, ok)
		assert.Equal(t, closed[p], ai.Watermark, "partition %d restored at its end-of-input watermark", p)
		d := again.chk.decisionsOf(tp)
		assert.Equal(t, Late, d[ends[tp]+1], "partition %d: an event of a written window", p)
		assert.Equal(t, Admitted, d[ends[tp]+2], "partition %d: a later event", p)
	}
}

// The input's end takes in the partitions of the topic that the consumer does not own, by
// their closed_through in the sink: a window holding only their data still completes, as the
// owned partition's end-of-input watermark reaches its end. One that stays behind is logged
// at the end, with the windows it leaves incomplete and why.
func TestBoundedInputEndOverPartitionsNotOwned(t *testing.T) {
	p0, p1, p2 := tp("t", 0), tp("t", 1), tp("t", 2)
	partial := func(start string) sink.Partial {
		return sink.Partial{Key: sink.Key{WindowStart: at(start), Dimension: "line", DimensionID: "A"},
			WindowEnd: at(start).Add(5 * time.Minute), Attrs: map[string]string{"owner": "op-A"}, Stats: sinkfixture.Stats(t, 1)}
	}
	for _, tc := range []struct {
		name    string
		others  []sink.CloseBatch
		revoke  bool   // p1 is owned first, then revoked
		end     string // p0's closed_through at the end
		warn    []string
		merged  string // a window start whose merged row of line A is complete at the end
		partsOf []ledger.TopicPartition
	}{
		{name: "ahead", others: []sink.CloseBatch{{Source: p1, ClosedThrough: at("20"), Partials: []sink.Partial{partial("15")}}},
			end: "20", merged: "15"},
		{name: "behind", others: []sink.CloseBatch{{Source: p1, ClosedThrough: at("5"), Partials: []sink.Partial{partial("0")}}},
			end: "15", warn: []string{"windows=\"from 2026-03-02T12:05:00Z through the one ending 2026-03-02T12:15:00Z\"",
				"t[1] closed_through=2026-03-02T12:05:00Z (not assigned to this consumer in this run"}},
		{name: "never closed", others: []sink.CloseBatch{{Source: p1, ClosedThrough: at("20")}, {Source: p2}},
			end: "20", warn: []string{"windows=\"every window through the one ending 2026-03-02T12:15:00Z\"", "t[2] closed_through=none"}},
		{name: "revoked", revoke: true, end: "15", warn: []string{"t[1] closed_through=2026-03-02T11:59:00Z (revoked from this consumer during the run"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config[string]) { c.Until = Until{End: true} })
			require.NoError(t, h.mem.WriteClose(h.ctx, tc.others...))
			topic := []ledger.TopicPartition{p0, p1, p2}
			as := []assignment{{tp: p0, committed: -1, stop: 3}}
			if tc.revoke {
				as = append(as, assignment{tp: p1, committed: -1, stop: 9})
			}
			require.NoError(t, h.p.assign(h.ctx, as, topic))
			h.p.assignedOnce = true
			if tc.revoke {
				h.feed(p1, 0, "w 1 B 1")
				h.p.revoke(h.ctx, []ledger.TopicPartition{p1}, false, CommitRevoke)
			}
			if len(tc.others) < 2 {
				require.NoError(t, h.mem.WriteClose(h.ctx, sink.CloseBatch{Source: p2, Empty: true}))
			}
			h.feed(p0, 0, "w 1 A 1", "w 6 A 2", "w 11 B 3")
			for i := 0; !h.p.boundedDone(); i++ {
				require.Less(t, i, 10, "done within 10 ticks")
				h.tick()
			}
			assert.Equal(t, at(tc.end), progress(t, h.mem, "t", 1)[0])
			assert.Equal(t, at(tc.end), h.checkpoint(p0), "the commit's metadata holds it too")
			if tc.merged != "" {
				a, ok, err := h.mem.Aggregate(h.ctx, sink.Key{WindowStart: at(tc.merged), Dimension: "line", DimensionID: "A"})
				require.NoError(t, err)
				require.True(t, ok, "the merged row of the window ending at the input's end")
				assert.True(t, a.Complete)
			}
			h.p.reportIncomplete(h.ctx)
			if len(tc.warn) == 0 {
				assert.NotContains(t, h.logs.String(), "left incomplete")
			}
			for _, w := range tc.warn {
				assert.Contains(t, h.logs.String(), w)
			}
		})
	}
}

// Without a sink there are no windows: a bounded run is done once its partitions reached
// their stops and are committed.
func TestBoundedRunWithoutASink(t *testing.T) {
	h := newHarness(t, func(c *Config[string]) { c.Until, c.Sink, c.Series = Until{End: true}, nil, nil })
	p0 := tp("t", 0)
	require.NoError(t, h.p.assign(h.ctx, []assignment{{tp: p0, committed: 4, stop: 4}}, nil))
	h.p.assignedOnce = true
	h.tick()
	assert.True(t, h.p.boundedDone())
}
