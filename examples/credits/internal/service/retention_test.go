package service_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/examples/credits/internal/credit"
	"github.com/streamledger/streamledger/examples/credits/internal/service"
	"github.com/streamledger/streamledger/internal/kafkatest"
	"github.com/streamledger/streamledger/sink"
)

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// The retention horizon, with the topic's declared retention of 24 h and markers kept 48 h:
// a replay while the marker is kept is a duplicate; after the horizon the marker is pruned,
// and a replay of the old credit is refused and dead-lettered as beyond the horizon instead
// of crediting again, while a recent credit is still applied.
func TestRetentionHorizon(t *testing.T) {
	e := newEnv(t, 1)
	opening := map[string]int64{"a1": 100, "a2": 100}
	e.open(opening)
	t0 := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	clk := &clock{now: t0.Add(time.Hour)}
	e.kc.Produce(t, &kafkatest.Record{Topic: topic, Value: credit.Credit{ID: "c1", Account: "a1", Amount: 10}.Payload(), Timestamp: t0})
	cfg := func() service.Config {
		c := e.config("g")
		c.Horizon = 48 * time.Hour
		c.SourceRetention = 24 * time.Hour
		c.Clock = clk.Now
		return c
	}
	run := func(name string, committed ...int64) *instance {
		t.Helper()
		in := e.start(name, cfg())
		e.waitCommitted("g", committed...)
		require.NoError(t, in.stop(t))
		return in
	}
	rewind := func() { e.kc.Commit(t, "g", topic, 0, 0, "") }
	c1 := expect{applied: true, account: "a1", amount: 10}

	// Applied one hour after its record's time: the marker is stamped then.
	assert.Equal(t, []string{"c1:applied"}, run("first", 1).outcomes())
	markers, err := e.store.Markers(context.Background())
	require.NoError(t, err)
	assert.Equal(t, t0.Add(time.Hour), markers["c1"])

	// 47 h after the marker: kept; a replay is a duplicate.
	clk.Set(t0.Add(48 * time.Hour))
	svc, err := service.New(cfg())
	require.NoError(t, err)
	n, err := svc.Prune(context.Background())
	require.NoError(t, err)
	assert.Zero(t, n, "a marker younger than the horizon is never pruned")
	rewind()
	assert.Equal(t, []string{"c1:duplicate"}, run("replay within the horizon", 1).outcomes())
	e.verify("after the replay within the horizon", opening, map[string]expect{"c1": c1})

	// Past the horizon: the marker is pruned.
	clk.Set(t0.Add(49*time.Hour + time.Second))
	n, err = svc.Prune(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(1), n)
	markers, err = e.store.Markers(context.Background())
	require.NoError(t, err)
	assert.Empty(t, markers)

	// A replay older than the horizon finds no marker and is refused, not credited again; a
	// credit recorded within the horizon is applied.
	e.kc.Produce(t, &kafkatest.Record{Topic: topic, Value: credit.Credit{ID: "c2", Account: "a2", Amount: 7}.Payload(), Timestamp: t0.Add(49 * time.Hour)})
	rewind()
	in := run("replay beyond the horizon", 2)
	assert.Equal(t, []string{"c1:dead-lettered:" + service.ClassBeyondHorizon, "c2:applied"}, in.outcomes())
	got, dls := e.letters()
	assert.Equal(t, []string{"credits/0@0 " + service.ClassBeyondHorizon}, got)
	assert.Contains(t, dls[0].ErrorMessage, `credit "c1" is 49h0m1s old, beyond the marker horizon 48h0m0s, and has no marker`)
	// c1's entry is the one from the first run: the balance did not move again, and the
	// refused replay left no marker.
	e.verify("after the replay beyond the horizon", opening, map[string]expect{
		"c1": {applied: true, account: "a1", amount: 10, pruned: true},
		"c2": {applied: true, account: "a2", amount: 7},
	})
}

// The horizon may not be shorter than what the topic can redeliver: the service refuses
// such a configuration, with the topic's retention read from the broker.
func TestHorizonShorterThanRetentionRefused(t *testing.T) {
	e := newEnv(t, 1)
	require.NoError(t, e.kc.Cluster.CreateTopic("day", 1, map[string]string{"retention.ms": "86400000"}))
	require.NoError(t, e.kc.Cluster.CreateTopic("forever", 1, map[string]string{"retention.ms": "-1"}))
	ctx := context.Background()
	for _, tc := range []struct {
		topic string
		want  time.Duration
	}{
		{topic, 7 * 24 * time.Hour}, // the broker's default
		{"day", 24 * time.Hour},
		{"forever", service.Forever},
	} {
		got, err := service.TopicRetention(ctx, e.config("g").Kafka, tc.topic)
		require.NoError(t, err, tc.topic)
		assert.Equal(t, tc.want, got, tc.topic)
	}
	_, err := service.TopicRetention(ctx, e.config("g").Kafka, "missing")
	assert.Error(t, err)

	for _, tc := range []struct {
		horizon, retention time.Duration
		refused            bool
	}{
		{horizon: 12 * time.Hour, retention: 24 * time.Hour, refused: true},
		{horizon: 24 * time.Hour, retention: 24 * time.Hour},
		{horizon: 30 * 24 * time.Hour, retention: 7 * 24 * time.Hour},
		{horizon: 0, retention: 7 * 24 * time.Hour},                // the default, 7 days
		{horizon: 0, retention: 8 * 24 * time.Hour, refused: true}, // the default is too short
		{horizon: service.Forever, retention: 8 * 24 * time.Hour},  // markers kept forever
		{horizon: 365 * 24 * time.Hour, retention: service.Forever, refused: true},
		{horizon: service.Forever, retention: service.Forever},
	} {
		cfg := e.config("g")
		cfg.Horizon, cfg.SourceRetention = tc.horizon, tc.retention
		_, err := service.New(cfg)
		if tc.refused {
			assert.ErrorIs(t, err, sink.ErrHorizon, "horizon %v, retention %v", tc.horizon, tc.retention)
		} else {
			assert.NoError(t, err, "horizon %v, retention %v", tc.horizon, tc.retention)
		}
	}
}
