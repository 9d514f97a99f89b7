package dlqkafka_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/dlq/dlqkafka"
	"github.com/streamledger/streamledger/internal/kafkatest"
	"github.com/streamledger/streamledger/sink"
)

func replayConfig(c *kafkatest.Cluster, topic string) dlqkafka.ReplayConfig {
	return dlqkafka.ReplayConfig{Kafka: c.ConfigMap(), Topic: topic, Retry: sink.RetryPolicy{InitialBackoff: 10 * time.Millisecond}, CommitInterval: time.Hour}
}

func replay(t *testing.T, cfg dlqkafka.ReplayConfig) dlq.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kafkatest.Timeout)
	defer cancel()
	rep, err := dlqkafka.Replay(ctx, cfg)
	require.NoError(t, err)
	return rep
}

// putLetters writes letters straight to their dead-letter topic (dlq.<topic>) and partition, as
// a Producer would, so that tests control every field.
func putLetters(t *testing.T, c *kafkatest.Cluster, letters ...dlq.DeadLetter) {
	t.Helper()
	for _, d := range letters {
		hs, err := d.Headers()
		require.NoError(t, err)
		c.Produce(t, &kafkatest.Record{Topic: dlq.DefaultTopic(d.Topic), Partition: d.Partition, Key: d.Key, Value: d.Value, Headers: toKafkatest(hs), Timestamp: d.FailedAt})
	}
}

func mkLetter(partition int32, offset int64, class string, replays int) dlq.DeadLetter {
	return dlq.DeadLetter{
		Record:       source("arrivals", partition, offset),
		ErrorClass:   class,
		ErrorMessage: class + " failure at " + fmt.Sprint(offset),
		ConsumerID:   "p",
		FailedAt:     t0.Add(time.Duration(offset) * time.Minute),
		ReplayCount:  replays,
	}
}

// committed returns the group's committed offsets for topic, by partition; group "" is the
// default replay group of topic.
func committed(c *kafkatest.Cluster, group, topic string) map[int32]int64 {
	if group == "" {
		group = "streamledger-replay." + topic
	}
	out := map[int32]int64{}
	gi := c.GroupInfo(group)
	if gi == nil {
		return out
	}
	for p, gc := range gi.Commits[topic] {
		out[p] = gc.Offset
	}
	return out
}

// TestReplayDeliversExactOriginal runs the whole path: original messages are dead-lettered by a
// Producer, replayed, and read back from the source topic by an independent client: same
// partition, exact key and value bytes, the original headers in order plus a replay count of 1,
// and (with KeepTimestamp) the original timestamp. DLQ offsets are committed to the high
// watermark, so a second run replays nothing.
func TestReplayDeliversExactOriginal(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"arrivals": 3, "dlq.arrivals": 3}})
	var orig []*kafkatest.Record
	for i := range 6 {
		r := source("arrivals", int32(i%3), int64(i))
		orig = append(orig, &kafkatest.Record{Topic: "arrivals", Partition: r.Partition, Key: r.Key, Value: r.Value, Headers: toKafkatest(r.Headers), Timestamp: origTime.Add(time.Duration(i) * time.Millisecond)})
	}
	orig[5].Key, orig[5].Value = nil, nil
	c.Produce(t, orig...)

	p := newProducer(t, c, dlqkafka.Config{})
	for _, m := range c.ReadAll(t, "arrivals") {
		rec := dlq.Record{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, Timestamp: m.Timestamp, Key: m.Key, Value: m.Value, Headers: fromKafkatest(m.Headers)}
		require.NoError(t, send(t, p, rec, &schemaError{"delay"}).Err)
	}

	cfg := replayConfig(c, "dlq.arrivals")
	cfg.KeepTimestamp = true
	rep := replay(t, cfg)
	require.Equal(t, 6, rep.Replayed)
	require.Equal(t, 6, rep.Total())
	require.Len(t, rep.Classes, 1)
	require.Equal(t, "schema", rep.Classes[0].Class)

	after := c.ReadAll(t, "arrivals")
	require.Len(t, after, 12)
	for _, o := range orig {
		var copies []kafkatest.Record
		for _, m := range after {
			if m.Partition == o.Partition && m.Offset != o.Offset && string(m.Value) == string(o.Value) && string(m.Key) == string(o.Key) {
				copies = append(copies, m)
			}
		}
		require.Len(t, copies, 1, "one replayed copy of %s", o)
		got := copies[0]
		require.Equal(t, o.Key, got.Key)
		require.Equal(t, o.Value, got.Value)
		require.Equal(t, append(append([]kafkatest.Header(nil), o.Headers...), kafkatest.Header{Key: dlq.HeaderReplayCount, Value: []byte("1")}), got.Headers)
		require.True(t, o.Timestamp.Equal(got.Timestamp), "original timestamp kept: %v vs %v", o.Timestamp, got.Timestamp)
	}
	require.Equal(t, map[int32]int64{0: 2, 1: 2, 2: 2}, committed(c, "streamledger-replay.dlq.arrivals", "dlq.arrivals"))

	again := replay(t, cfg)
	require.Zero(t, again.Total(), "the group is past every letter")
	require.Len(t, c.ReadAll(t, "arrivals"), 12)
}

// TestReplayToChosenTopicAndPartition sends every letter to one partition of another topic; a
// target partition that does not exist stops the replay before anything is produced or
// committed.
func TestReplayToChosenTopicAndPartition(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"arrivals": 3, "dlq.arrivals": 3, "retry": 2}})
	putLetters(t, c, mkLetter(0, 1, "a", 0), mkLetter(2, 2, "a", 0))

	cfg := replayConfig(c, "dlq.arrivals")
	cfg.TargetTopic = "retry"
	cfg.TargetPartition = ptr(int32(5))
	_, err := dlqkafka.Replay(context.Background(), cfg)
	require.ErrorIs(t, err, dlqkafka.ErrTargetMissing)
	require.ErrorContains(t, err, `replay to "retry": dlqkafka: replay target does not exist: expected partition 5, the topic has 2 partitions`)
	require.Empty(t, committed(c, cfg.Group, "dlq.arrivals"))
	require.Empty(t, committed(c, "streamledger-replay.dlq.arrivals", "dlq.arrivals"))

	cfg.TargetPartition = ptr(int32(1))
	cfg.Group = "my-replay"
	before := time.Now().Add(-time.Second)
	rep := replay(t, cfg)
	require.Equal(t, 2, rep.Replayed)
	got := c.ReadAll(t, "retry")
	require.Len(t, got, 2)
	for _, m := range got {
		require.Equal(t, int32(1), m.Partition)
		require.True(t, m.Timestamp.After(before), "without KeepTimestamp the replay stamps its own time")
	}
	require.Empty(t, c.ReadAll(t, "arrivals"))
	require.Equal(t, map[int32]int64{0: 1, 2: 1}, committed(c, "my-replay", "dlq.arrivals"))
}

// mixedLetters: partition 0 holds schema x3, range x2, a letter that has looped and an invalid
// message; partition 1 holds one letter of class "" (unknown).
func mixedLetters(t *testing.T, c *kafkatest.Cluster) {
	putLetters(t, c,
		mkLetter(0, 0, "schema", 0), mkLetter(0, 1, "range", 0), mkLetter(0, 2, "schema", 1),
		mkLetter(0, 3, "schema", 3), mkLetter(0, 4, "range", 2), mkLetter(1, 5, "", 0))
	c.Produce(t, &kafkatest.Record{Topic: "dlq.arrivals", Partition: 0, Value: []byte("not a letter"),
		Headers: []kafkatest.Header{{Key: dlq.HeaderVersion, Value: []byte("1")}, {Key: dlq.HeaderTopic, Value: []byte("arrivals")}}})
}

// TestReplayDryRun groups the letters by class with counts, lists each one, and produces and
// commits nothing; a real run then decides exactly the same.
func TestReplayDryRun(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"arrivals": 2, "dlq.arrivals": 2}})
	mixedLetters(t, c)

	cfg := replayConfig(c, "dlq.arrivals")
	cfg.DryRun = true
	var entries []dlqkafka.Entry
	cfg.OnEntry = func(e dlqkafka.Entry) { entries = append(entries, e) }
	rep := replay(t, cfg)

	require.True(t, rep.DryRun)
	require.Equal(t, 5, rep.Replayed)
	require.Equal(t, 1, rep.Refused)
	require.Equal(t, 1, rep.Invalid)
	require.ErrorContains(t, errors.New(rep.InvalidExample), "dlq.arrivals[0]@5: dlq: header __streamledger.dlq.partition is missing")
	classes := map[string][3]int{}
	for _, cs := range rep.Classes {
		classes[cs.Class] = [3]int{cs.Count, cs.Replayed, cs.Refused}
	}
	require.Equal(t, map[string][3]int{"schema": {3, 2, 1}, "range": {2, 2, 0}, "": {1, 1, 0}}, classes)
	var text strings.Builder
	_, err := rep.WriteTo(&text)
	require.NoError(t, err)
	require.Contains(t, text.String(), "7 dead letters: would replay 5, skipped 0, refused 1, invalid 1\n")
	require.Len(t, entries, 7)
	byOffset := map[int64]dlqkafka.Entry{}
	for _, e := range entries {
		byOffset[int64(e.Partition)*100+e.Offset] = e
	}
	require.Equal(t, dlq.Refuse, byOffset[3].Decision)
	require.Equal(t, dlq.Replay, byOffset[4].Decision)
	require.Error(t, byOffset[5].Err)
	require.Equal(t, int64(5), byOffset[100].Letter.Offset)

	require.Empty(t, c.ReadAll(t, "arrivals"), "a dry run produces nothing")
	require.Empty(t, committed(c, cfg.Group, "dlq.arrivals"), "a dry run commits nothing")

	cfg.DryRun, cfg.OnEntry = false, nil
	real := replay(t, cfg)
	real.DryRun = true
	require.Equal(t, rep, real)
	require.Len(t, c.ReadAll(t, "arrivals"), 5)
	require.Equal(t, map[int32]int64{0: 6, 1: 1}, committed(c, cfg.Group, "dlq.arrivals"))
}

// TestReplayRefusesPoisonLoop follows a message that always fails: dead-lettered, replayed,
// failing again (its dead letter now says it was replayed once), and then refused by a policy
// allowing one replay. It is not republished a second time and the group moves past it.
func TestReplayRefusesPoisonLoop(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"arrivals": 1, "dlq.arrivals": 1}})
	c.Produce(t, &kafkatest.Record{Topic: "arrivals", Value: []byte("poison"), Headers: []kafkatest.Header{{Key: "h", Value: []byte("1")}}})
	p := newProducer(t, c, dlqkafka.Config{})
	cfg := replayConfig(c, "dlq.arrivals")
	cfg.Policy.MaxReplays = 1

	deadLetterLast := func() {
		got := c.ReadAll(t, "arrivals")
		m := got[len(got)-1]
		rec := dlq.Record{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, Timestamp: m.Timestamp, Key: m.Key, Value: m.Value, Headers: fromKafkatest(m.Headers)}
		require.NoError(t, send(t, p, rec, errors.New("still poison")).Err)
	}
	deadLetterLast()
	require.Equal(t, 1, replay(t, cfg).Replayed)
	require.Len(t, c.ReadAll(t, "arrivals"), 2)

	deadLetterLast() // the replayed copy fails too
	dl := c.ReadAll(t, "dlq.arrivals")
	require.Len(t, dl, 2)
	second, err := dlq.Decode(dl[1].Key, dl[1].Value, fromKafkatest(dl[1].Headers))
	require.NoError(t, err)
	require.Equal(t, 1, second.ReplayCount)
	require.Equal(t, []dlq.Header{{Key: "h", Value: []byte("1")}}, second.Record.Headers)

	rep := replay(t, cfg)
	require.Equal(t, 0, rep.Replayed)
	require.Equal(t, 1, rep.Refused)
	require.Len(t, c.ReadAll(t, "arrivals"), 2, "not republished")
	require.Equal(t, map[int32]int64{0: 2}, committed(c, cfg.Group, "dlq.arrivals"))
}

// TestReplayCommitsOnlyConfirmed: offset 0 is skipped, offset 1 is replayed but the broker
// rejects it, offset 2 is skipped. The replay fails, and the group is committed to 1: past the
// skipped letter, never past the unconfirmed one although the letter after it was decided. The
// next run replays it.
func TestReplayCommitsOnlyConfirmed(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"arrivals": 1, "dlq.arrivals": 1}})
	putLetters(t, c, mkLetter(0, 0, "other", 0), mkLetter(0, 1, "schema", 0), mkLetter(0, 2, "other", 0))
	fault := c.FailProduce("arrivals", -1, nil)

	cfg := replayConfig(c, "dlq.arrivals")
	cfg.Policy.Classes = []string{"schema"}
	cfg.Retry.MaxAttempts = 2
	rep, err := dlqkafka.Replay(context.Background(), cfg)
	var de *dlqkafka.DeliveryError
	require.ErrorAs(t, err, &de)
	require.Equal(t, int64(1), de.Source.Offset)
	require.Equal(t, 2, de.Attempts)
	require.Equal(t, 2, fault.Hits())
	require.Zero(t, rep.Replayed)
	require.Equal(t, 2, rep.Skipped)
	require.Equal(t, map[int32]int64{0: 1}, committed(c, cfg.Group, "dlq.arrivals"))
	require.Empty(t, c.ReadAll(t, "arrivals"))

	fault.Remove()
	rep = replay(t, cfg)
	require.Equal(t, 1, rep.Replayed)
	require.Equal(t, 1, rep.Skipped, "offset 2 is decided again: it was never committed")
	require.Equal(t, map[int32]int64{0: 3}, committed(c, cfg.Group, "dlq.arrivals"))
	require.Len(t, c.ReadAll(t, "arrivals"), 1)
}

// TestReplayLimitAndTimeFilter: a time filter skips (and commits past) letters outside it; the
// Limit stops the replay after that many letters, committing only up to the last one replayed.
func TestReplayLimitAndTimeFilter(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"arrivals": 1, "dlq.arrivals": 1}})
	var ls []dlq.DeadLetter
	for i := range 6 {
		ls = append(ls, mkLetter(0, int64(i), "schema", 0)) // failed at t0 + i minutes
	}
	putLetters(t, c, ls...)

	cfg := replayConfig(c, "dlq.arrivals")
	cfg.Policy = dlq.Policy{FailedFrom: t0.Add(2 * time.Minute), FailedBefore: t0.Add(10 * time.Minute), Limit: 2}
	rep := replay(t, cfg)
	require.Equal(t, 2, rep.Skipped)
	require.Equal(t, 2, rep.Replayed)
	require.Equal(t, map[int32]int64{0: 4}, committed(c, cfg.Group, "dlq.arrivals"))
	var offsets []string
	for _, m := range c.ReadAll(t, "arrivals") {
		offsets = append(offsets, string(m.Headers[0].Value))
	}
	require.Equal(t, []string{"t-2", "t-3"}, offsets)

	rep = replay(t, cfg)
	require.Equal(t, 2, rep.Replayed)
	require.Zero(t, rep.Skipped)
	require.Equal(t, map[int32]int64{0: 6}, committed(c, cfg.Group, "dlq.arrivals"))
}

// TestReplayCanceledWhileUnconfirmed: the context ends while a replayed letter's delivery is
// still being retried by the client; the replay returns the context's error after
// ShutdownTimeout and commits past the skipped letter before it, not past the unconfirmed one.
func TestReplayCanceledWhileUnconfirmed(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"arrivals": 1, "dlq.arrivals": 1}})
	putLetters(t, c, mkLetter(0, 0, "other", 0), mkLetter(0, 1, "schema", 0))
	c.FailProduce("arrivals", -1, kerr.NotEnoughReplicas) // retriable: librdkafka keeps trying

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := replayConfig(c, "dlq.arrivals")
	cfg.Policy.Classes = []string{"schema"}
	cfg.ShutdownTimeout = 200 * time.Millisecond
	cfg.OnEntry = func(e dlqkafka.Entry) {
		if e.Decision == dlq.Replay {
			cancel()
		}
	}
	rep, err := dlqkafka.Replay(ctx, cfg)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "1 deliveries unconfirmed")
	require.Zero(t, rep.Replayed)
	require.Equal(t, 1, rep.Skipped)
	require.Equal(t, map[int32]int64{0: 1}, committed(c, cfg.Group, "dlq.arrivals"))
}

func TestReplayErrors(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"arrivals": 1}})
	_, err := dlqkafka.Replay(context.Background(), replayConfig(c, "dlq.arrivals"))
	require.ErrorIs(t, err, dlqkafka.ErrTopicMissing)
	require.ErrorContains(t, err, `"dlq.arrivals"`)

	for name, mutate := range map[string]func(*dlqkafka.ReplayConfig){
		"no kafka":           func(cfg *dlqkafka.ReplayConfig) { cfg.Kafka = nil },
		"no topic":           func(cfg *dlqkafka.ReplayConfig) { cfg.Topic = "" },
		"bad topic":          func(cfg *dlqkafka.ReplayConfig) { cfg.Topic = "a b" },
		"target is the dlq":  func(cfg *dlqkafka.ReplayConfig) { cfg.TargetTopic = "dlq.arrivals" },
		"negative partition": func(cfg *dlqkafka.ReplayConfig) { cfg.TargetPartition = ptr(int32(-1)) },
		"negative limit":     func(cfg *dlqkafka.ReplayConfig) { cfg.Policy.Limit = -1 },
		"negative in flight": func(cfg *dlqkafka.ReplayConfig) { cfg.MaxInFlight = -1 },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := replayConfig(c, "dlq.arrivals")
			mutate(&cfg)
			_, err := dlqkafka.Replay(context.Background(), cfg)
			require.ErrorIs(t, err, dlqkafka.ErrConfig)
		})
	}

	// A canceled context stops before anything is decided.
	c.CreateTopic(t, "dlq.arrivals", 1)
	putLetters(t, c, mkLetter(0, 0, "a", 0))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err := dlqkafka.Replay(ctx, replayConfig(c, "dlq.arrivals"))
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, rep.Total())
	require.Empty(t, c.ReadAll(t, "arrivals"))
}

func ptr[T any](v T) *T { return &v }
