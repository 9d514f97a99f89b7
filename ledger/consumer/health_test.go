package consumer

import (
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/kafkatest"
	"github.com/streamledger/streamledger/ledger"
)

// The liveness state machine, step by step: starting from New until the first assignment,
// no assignment past AssignmentWait, healthy while partitions are held, stalled while writes
// fail or hang past WriteTimeout, stopped after Run.
func TestHealthStates(t *testing.T) {
	const wait, writeTimeout = 10 * time.Second, 5 * time.Second
	t0 := time.Unix(1_000_000, 0)
	var l liveness
	at := func(d time.Duration) Health { return l.health(t0.Add(d), wait, writeTimeout) }
	steps := []struct {
		name string
		do   func()
		at   time.Duration
		want HealthState
	}{
		{"New", func() { l.started(t0.Add(-time.Hour)) }, -time.Hour + time.Second, HealthStarting},
		{"New, no Run past the wait", func() {}, -time.Hour + 11*time.Second, HealthNoAssignment},
		{"Run started", func() { l.started(t0) }, time.Second, HealthStarting},
		{"nothing assigned past the wait", func() {}, 11 * time.Second, HealthNoAssignment},
		{"an empty assignment", func() { l.assigned(t0.Add(12*time.Second), 0) }, 13 * time.Second, HealthNoAssignment},
		{"partitions", func() { l.assigned(t0.Add(14*time.Second), 2) }, 15 * time.Second, Healthy},
		{"writes in flight", func() { l.writingFrom.Store(t0.Add(16 * time.Second).UnixNano()) }, 20 * time.Second, Healthy},
		{"writes in flight past WriteTimeout", func() {}, 22 * time.Second, HealthStalledWrites},
		{"a failed write", func() { l.wrote(t0.Add(23*time.Second), false) }, 24 * time.Second, Healthy},
		{"failing past WriteTimeout", func() { l.wrote(t0.Add(26*time.Second), false) }, 29 * time.Second, HealthStalledWrites},
		{"a write succeeds", func() { l.wrote(t0.Add(30*time.Second), true) }, 31 * time.Second, Healthy},
		{"revoked", func() { l.assigned(t0.Add(32*time.Second), 0) }, 40 * time.Second, Healthy},
		{"revoked past the wait", func() {}, 43 * time.Second, HealthNoAssignment},
		{"Run returned", func() { l.stopped.Store(true) }, 44 * time.Second, HealthStopped},
	}
	for _, s := range steps {
		s.do()
		h := at(s.at)
		assert.Equal(t, s.want, h.State, "%s: %+v", s.name, h)
	}
	h := at(43 * time.Second)
	assert.Equal(t, 11*time.Second, h.Unassigned)
	assert.Equal(t, 11*time.Second, h.SinceAssignment)
}

// A consumer is starting from New, so that a process serving Health before it calls Run
// (which blocks) answers a probe in between as starting, not stopped.
func TestHealthStartingFromNew(t *testing.T) {
	c, err := New(Config[string]{
		Kafka:  kafka.ConfigMap{"bootstrap.servers": "unused:9092", "group.id": "g"},
		Topics: map[string]Handler[string]{"t": testHandler}, Sink: newMemory(t), Series: testKeys,
	})
	require.NoError(t, err)
	h := c.Health()
	assert.Equal(t, HealthStarting, h.State)
	assert.Zero(t, h.Partitions)
	assert.Less(t, h.SinceAssignment, time.Minute, "measured from New")
}

// A consumer whose close writes fail reports stalled writes once they have failed for longer
// than WriteTimeout, and healthy again after a write succeeds.
func TestHealthStalledWrites(t *testing.T) {
	fs := &failingCloses{fail: true}
	h := newHarness(t, func(c *Config[string]) {
		fs.Sink = c.Sink
		c.Sink = fs
		c.WriteTimeout = 20 * time.Millisecond
	})
	h.p.live.started(time.Now())
	p0 := tp("t", 0)
	h.assign(p0, -1, "")
	h.p.live.assigned(time.Now(), 1)
	h.feed(p0, 0, "w 1 A 1", "w 7 A 2")
	h.tick()
	health := func() HealthState { return h.p.live.health(time.Now(), h.p.s.AssignmentWait, h.p.s.WriteTimeout).State }
	assert.Equal(t, Healthy, health(), "failing, but not for longer than WriteTimeout yet")
	time.Sleep(30 * time.Millisecond)
	assert.Equal(t, HealthStalledWrites, health())
	fs.fail = false
	h.tick()
	assert.Equal(t, Healthy, health())
}

// With the real client and broker: of two consumers in a group of a one-partition topic, the
// one the assignor leaves without it warns once AssignmentWait has passed and reports it; the
// other is healthy. Either may be left out: the assignor orders the members by their IDs,
// which the broker makes (the in-process broker's end in a random UUID).
func TestKafkaNoAssignmentWarns(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"na": 1}})
	produceStream(t, c, "na", "w 1 A 1")
	mod := func(cfg *Config[string]) { cfg.AssignmentWait = 300 * time.Millisecond }
	first := start(t, "first", clientConfig(c, "gna", "range"), newMemory(t), []string{"na"}, mod)
	waitDecided(t, map[ledger.TopicPartition]int64{{Topic: "na", Partition: 0}: 0}, first)
	second := start(t, "second", clientConfig(c, "gna", "range"), newMemory(t), []string{"na"}, mod)
	var idle, holder *instance
	eventually(t, "one of them reports no assignment", func() bool {
		switch {
		case first.c.Health().State == HealthNoAssignment:
			idle, holder = first, second
		case second.c.Health().State == HealthNoAssignment:
			idle, holder = second, first
		}
		return idle != nil
	})
	eventually(t, "and has warned", func() bool {
		return strings.Contains(idle.logs.String(), "held no partition for longer than AssignmentWait")
	})
	h := idle.c.Health()
	assert.Zero(t, h.Partitions)
	assert.Greater(t, h.Unassigned, 300*time.Millisecond)
	eventually(t, "the other holds the partition", func() bool {
		hh := holder.c.Health()
		return hh.State == Healthy && hh.Partitions == 1
	})
	require.NoError(t, idle.stop(t))
	assert.Equal(t, HealthStopped, idle.c.Health().State)
	assert.Equal(t, 1, strings.Count(idle.logs.String(), "held no partition for longer"), "warned once")
}

// A consumer that gets no assignment within a session timeout of its start says once, at
// INFO, what the group waits for and what static membership changes; not after the
// AssignmentWait warning, nor once an assignment came.
func TestFirstAssignmentWait(t *testing.T) {
	for _, tc := range []struct {
		name     string
		instance string
		warned   bool
		assigned bool
		want     string
	}{
		{name: "dynamic member", want: "group.instance.id=unset"},
		{name: "static member", instance: "m-1", want: "group.instance.id=m-1"},
		{name: "after the warning", warned: true},
		{name: "assigned", assigned: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config[string]) {
				c.Kafka["session.timeout.ms"] = 6000
				if tc.instance != "" {
					c.Kafka["group.instance.id"] = tc.instance
				}
			})
			h.p.subscribed()
			assert.Contains(t, h.logs.String(), "waiting for the group to assign partitions")
			h.p.live.started(time.Now().Add(-5 * time.Second))
			h.p.checkFirstAssignment()
			assert.NotContains(t, h.logs.String(), "no partitions assigned", "within the session timeout")
			h.p.live.started(time.Now().Add(-7 * time.Second))
			h.p.live.warned = tc.warned
			if tc.assigned {
				h.p.live.assigned(time.Now(), 1)
			}
			h.p.checkFirstAssignment()
			h.p.checkFirstAssignment()
			logs := h.logs.String()
			if tc.want == "" {
				assert.NotContains(t, logs, "no partitions assigned")
				return
			}
			assert.Equal(t, 1, strings.Count(logs, "no partitions assigned after session.timeout.ms"), logs)
			assert.Contains(t, logs, "session.timeout.ms=6s")
			assert.Contains(t, logs, tc.want)
		})
	}
}
