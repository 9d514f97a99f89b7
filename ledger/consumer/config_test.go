package consumer

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/watermark"
	"github.com/streamledger/streamledger/window"
)

func validConfig(t *testing.T) Config[string] {
	return Config[string]{
		Kafka:  kafka.ConfigMap{"bootstrap.servers": "b:9092", "group.id": "g"},
		Topics: map[string]Handler[string]{"t": testHandler},
		Sink:   newMemory(t),
		Series: testKeys,
	}
}

func TestConfigDefaults(t *testing.T) {
	s, err := validConfig(t).validate()
	require.NoError(t, err)
	w, err := window.New(s.win)
	require.NoError(t, err)
	assert.Equal(t, 5*time.Minute, w.Size())
	wm := watermark.NewSet[string](s.wm).Config()
	assert.Equal(t, 120*time.Second, wm.Lateness)
	assert.Equal(t, 30*time.Second, wm.IdleTimeout)
	assert.Equal(t, 5*time.Second, s.FlushInterval)
	assert.Equal(t, 30*time.Second, s.WriteTimeout)
	assert.Equal(t, 30*time.Second, s.AssignTimeout)
	assert.Equal(t, 30*time.Second, s.ShutdownTimeout)
	assert.NotNil(t, s.Clock)
	assert.NotNil(t, s.Logger)
	assert.Equal(t, false, s.kafka["enable.auto.commit"])
	assert.Equal(t, false, s.kafka["enable.auto.offset.store"])
	assert.Equal(t, "g", s.kafka["group.id"], "the rest passes through")
	assert.Equal(t, 20, s.kafka["fetch.queue.backoff.ms"], "librdkafka's 1 s backoff stalls a fast consumer")
	assert.Equal(t, time.Second, s.FlushWhenCaughtUp, "early ticks once caught up, at most every fifth of the interval")
	assert.Equal(t, 2, s.WriteConcurrency, "a close beside a state flush")
	assert.Equal(t, int64(DefaultBufferLimit), s.BufferLimit)
	assert.Equal(t, 16<<10, s.kafka["queued.max.messages.kbytes"], "a sixteenth of the bound is the client's prefetch")
	assert.Equal(t, 2<<20, s.kafka["fetch.max.bytes"], "fetches of an eighth of the prefetch")
	assert.Equal(t, int64(DefaultBufferLimit-16<<20), s.buffer)
	assert.Equal(t, 3*45*time.Second, s.AssignmentWait, "three of librdkafka's session timeouts")
}

func TestConfigTicks(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		interval, caughtUp    time.Duration
		wantInt, wantCaughtUp time.Duration
	}{
		{"defaults", 0, 0, 5 * time.Second, time.Second},
		{"interval set: caught-up ticks a fifth of it", 10 * time.Second, 0, 10 * time.Second, 2 * time.Second},
		{"no caught-up ticks", 0, -1, 5 * time.Second, -1},
		{"on request only", -time.Second, 0, -1, -1},
		{"on request and when caught up", -1, time.Second, -1, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := validConfig(t)
			cfg.FlushInterval, cfg.FlushWhenCaughtUp = tc.interval, tc.caughtUp
			s, err := cfg.validate()
			require.NoError(t, err)
			assert.Equal(t, tc.wantInt, s.FlushInterval)
			assert.Equal(t, tc.wantCaughtUp, s.FlushWhenCaughtUp)
		})
	}
}

func TestConfigBufferLimit(t *testing.T) {
	for _, tc := range []struct {
		name          string
		limit         int64
		kafka         kafka.ConfigMap
		queued, fetch any
		messages      any
		buffer        int64
	}{
		{"large: prefetch at most 64 MiB", 4 << 30, nil, 64 << 10, 8 << 20, 32 << 10, 4<<30 - 64<<20},
		{"default: a sixteenth, fetches of an eighth of it", DefaultBufferLimit, nil, 16 << 10, 2 << 20, 8 << 10,
			DefaultBufferLimit - 16<<20},
		{"small: fetch.max.bytes at least 1 MiB", 1 << 20, nil, 64, 1 << 20, 32, 1<<20 - 64<<10},
		{"smallest: at least one message", minBufferLimit, nil, 4, 1 << 20, 2, minBufferLimit - 4<<10},
		{"fetch.max.bytes at least max.partition.fetch.bytes", DefaultBufferLimit,
			kafka.ConfigMap{"max.partition.fetch.bytes": "4194304"}, 16 << 10, 4 << 20, 8 << 10, DefaultBufferLimit - 16<<20},
		{"set by the user: kept", 1 << 30, kafka.ConfigMap{"queued.max.messages.kbytes": 1000, "fetch.max.bytes": 2 << 20,
			"queued.min.messages": 500}, 1000, 2 << 20, 500, 1<<30 - 64<<20},
		{"no bound: librdkafka's defaults", -1, nil, nil, nil, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := validConfig(t)
			cfg.BufferLimit = tc.limit
			for k, v := range tc.kafka {
				cfg.Kafka[k] = v
			}
			s, err := cfg.validate()
			require.NoError(t, err)
			assert.Equal(t, tc.queued, s.kafka["queued.max.messages.kbytes"])
			assert.Equal(t, tc.fetch, s.kafka["fetch.max.bytes"])
			assert.Equal(t, tc.messages, s.kafka["queued.min.messages"])
			assert.Equal(t, tc.buffer, s.buffer)
		})
	}
}

func TestConfigPassesThroughAndForces(t *testing.T) {
	cfg := validConfig(t)
	cfg.Kafka = kafka.ConfigMap{
		"bootstrap.servers": "b:9092", "group.id": "g", "client.id": "me", "security.protocol": "SASL_SSL",
		"sasl.password": "hunter2", "enable.auto.commit": "false", "enable.auto.offset.store": false,
		"fetch.queue.backoff.ms": 500,
	}
	s, err := cfg.validate()
	require.NoError(t, err)
	assert.Equal(t, "me", s.kafka["client.id"])
	assert.Equal(t, "SASL_SSL", s.kafka["security.protocol"])
	assert.Equal(t, "hunter2", s.kafka["sasl.password"])
	assert.Equal(t, 500, s.kafka["fetch.queue.backoff.ms"], "a set backoff is kept")
	assert.Equal(t, false, s.kafka["enable.auto.commit"])
	assert.Equal(t, "false", cfg.Kafka["enable.auto.commit"], "the caller's map is not modified")
}

func TestConfigErrors(t *testing.T) {
	type noHook struct{}
	cases := []struct {
		name string
		mod  func(*Config[string])
		want string
	}{
		{"no kafka", func(c *Config[string]) { c.Kafka = nil }, "Kafka"},
		{"auto commit", func(c *Config[string]) { c.Kafka["enable.auto.commit"] = true }, `Kafka["enable.auto.commit"]: expected false (or unset), found`},
		{"auto commit string", func(c *Config[string]) { c.Kafka["enable.auto.commit"] = "true" }, `Kafka["enable.auto.commit"]: expected false (or unset), found`},
		{"offset store", func(c *Config[string]) { c.Kafka["enable.auto.offset.store"] = "yes" }, `Kafka["enable.auto.offset.store"]: expected false (or unset), found yes`},
		{"events channel", func(c *Config[string]) { c.Kafka["go.events.channel.enable"] = true }, "go.events.channel.enable"},
		{"no group", func(c *Config[string]) { delete(c.Kafka, "group.id") }, "group.id is required"},
		{"no servers", func(c *Config[string]) { delete(c.Kafka, "bootstrap.servers") }, "bootstrap.servers is required"},
		{"no topics", func(c *Config[string]) { c.Topics = nil }, "Topics"},
		{"regex topic", func(c *Config[string]) { c.Topics["^t.*"] = testHandler }, "regular expression"},
		{"nil handler", func(c *Config[string]) { c.Topics["u"] = nil }, `topic "u" has a nil handler`},
		{"no series", func(c *Config[string]) { c.Series = nil }, "Series"},
		{"negative window", func(c *Config[string]) { c.WindowSize = -time.Second }, "WindowSize"},
		{"tiny buffer", func(c *Config[string]) { c.BufferLimit = 1000 }, "BufferLimit: expected at least 65536 bytes, or a negative value for no bound, found 1000"},
		{"write timeout vs poll interval", func(c *Config[string]) { c.Kafka["max.poll.interval.ms"] = 50000 }, "WriteTimeout"},
		{"bad poll interval", func(c *Config[string]) { c.Kafka["max.poll.interval.ms"] = "soon" }, "max.poll.interval.ms"},
		{"useless hook", func(c *Config[string]) { c.Hooks = []Hook{noHook{}} }, "implements none"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := validConfig(t)
			tc.mod(&cfg)
			_, err := New(cfg)
			require.ErrorIs(t, err, ErrConfig)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// noEffect is the Effect of the validation cases: any value.
var noEffect = struct{}{}

// Without a sink, a consumer takes effects only: no Keys are needed.
func TestConfigWithoutSink(t *testing.T) {
	cfg := validConfig(t)
	cfg.Sink, cfg.Series = nil, nil
	_, err := New(cfg)
	require.NoError(t, err)
}

func TestConfigEffectBatch(t *testing.T) {
	for _, tc := range []struct {
		batch, want, chunk int
		err                string
	}{
		{batch: 0, want: defaultEffectBatch, chunk: chunkSize},
		{batch: -1, want: 1, chunk: chunkSize},
		{batch: 16, want: 16, chunk: chunkSize},
		{batch: 1000, want: 1000, chunk: 1000},
		{batch: maxEffectBatch, want: maxEffectBatch, chunk: maxEffectBatch},
		{batch: maxEffectBatch + 1, err: "EffectBatch: expected at most 8192"},
	} {
		cfg := validConfig(t)
		cfg.EffectBatch = tc.batch
		s, err := cfg.validate()
		if tc.err != "" {
			require.ErrorIs(t, err, ErrConfig)
			assert.Contains(t, err.Error(), tc.err)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.want, s.effectBatch, "EffectBatch %d", tc.batch)
		assert.Equal(t, tc.chunk, s.chunk, "EffectBatch %d", tc.batch)
		assert.GreaterOrEqual(t, s.sealEvery, s.chunk)
	}
}

func TestSecretsAreRedacted(t *testing.T) {
	var buf strings.Builder
	log := slog.New(slog.NewTextHandler(&buf, nil))
	log.Info("start", redacted(kafka.ConfigMap{
		"sasl.password": "hunter2", "ssl.key.password": "k3y", "sasl.oauthbearer.client.secret": "s3cret",
		"sasl.oauthbearer.config": "principal=x secret=y", "ssl.key.pem": "-----BEGIN", "sasl.username": "alice",
		"client.id": "me",
	}))
	out := buf.String()
	for _, s := range []string{"hunter2", "k3y", "s3cret", "secret=y", "BEGIN"} {
		assert.NotContains(t, out, s)
	}
	assert.Contains(t, out, "alice")
	assert.Contains(t, out, "kafka.client.id=me")
	assert.Contains(t, out, "kafka.sasl.password=[redacted]")
}

func TestEventValidate(t *testing.T) {
	cases := []struct {
		name string
		ev   Event[string]
		want string
	}{
		{"zero", Event[string]{}, ""},
		{"state only, no time", Event[string]{State: []sink.StateRow{{Table: "x"}}}, ""},
		{"values without time", Event[string]{Values: []Value[string]{{Value: 1, Keys: []string{"a"}}}}, "needs an event time"},
		{"no key", Event[string]{Time: T0, Values: []Value[string]{{Value: 1}}}, "has no key"},
		{"nan", Event[string]{Time: T0, Values: []Value[string]{{Value: nan(), Keys: []string{"a"}}}}, "NaN"},
		{"huge", Event[string]{Time: T0, Values: []Value[string]{{Value: 1e39, Keys: []string{"a"}}}}, "magnitude"},
		{"far future", Event[string]{Time: time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC), Values: []Value[string]{{Value: 1, Keys: []string{"a"}}}}, "outside the years"},
		{"no table", Event[string]{State: []sink.StateRow{{}}}, "names no table"},
		{"effect only", Event[string]{Effect: noEffect}, ""},
		{"effect with a time", Event[string]{Time: T0, Effect: noEffect}, ""},
		{"effect and values", Event[string]{Time: T0, Values: []Value[string]{{Value: 1, Keys: []string{"a"}}}, Effect: noEffect}, "an event with an effect"},
		{"effect and state", Event[string]{State: []sink.StateRow{{Table: "x"}}, Effect: noEffect}, "an event with an effect"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.ev.Validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			var ee *EventError
			require.ErrorAs(t, err, &ee)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// A misspelled librdkafka property fails at New, naming it, not at Run.
func TestNewRefusesAnUnknownKafkaProperty(t *testing.T) {
	cfg := validConfig(t)
	cfg.Kafka["fetch.wiat.max.ms"] = 5
	_, err := New(cfg)
	require.ErrorIs(t, err, ErrConfig)
	assert.Contains(t, err.Error(), `"fetch.wiat.max.ms"`)
	delete(cfg.Kafka, "fetch.wiat.max.ms")
	cfg.Kafka["session.timeout.ms"] = "soon"
	_, err = New(cfg)
	require.ErrorIs(t, err, ErrConfig, "an invalid value too")
	delete(cfg.Kafka, "session.timeout.ms")
	cfg.Kafka["max.partition.fetch.bytes"] = "lots"
	_, err = New(cfg)
	require.ErrorIs(t, err, ErrConfig, "an invalid fetch size, which the bound reads")
	assert.Contains(t, err.Error(), `max.partition.fetch.bytes: expected bytes, found "lots"`)
}

func TestConfigLostRecords(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy LostPolicy
		dlq    bool
		err    string
	}{
		{"zero is stop", 0, false, ""},
		{"continue with a dead-letter topic", LostContinue, true, ""},
		{"continue without one", LostContinue, false, "LostRecords: LostContinue records each lost range as a dead letter, and DeadLetters is nil"},
		{"no such policy", LostPolicy(7), true, "LostRecords: expected LostStop or LostContinue, found LostPolicy(7)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := validConfig(t)
			cfg.LostRecords = tc.policy
			if tc.dlq {
				cfg.DeadLetters = &fakeDLQ{}
			}
			s, err := cfg.validate()
			if tc.err != "" {
				require.ErrorIs(t, err, ErrConfig)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.policy, s.LostRecords)
		})
	}
}

// The client gets auto.offset.reset=error, wherever the configuration set the policy, and the
// consumer keeps the configured one for partitions without a committed offset.
func TestConfigResetPolicyIsTheConsumers(t *testing.T) {
	for _, tc := range []struct {
		name string
		km   kafka.ConfigMap
		want string
	}{
		{"unset", kafka.ConfigMap{}, ""},
		{"top level", kafka.ConfigMap{"auto.offset.reset": "Earliest"}, "earliest"},
		{"topic level", kafka.ConfigMap{"default.topic.config": kafka.ConfigMap{"auto.offset.reset": "latest", "x": 1}}, "latest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := validConfig(t)
			for k, v := range tc.km {
				cfg.Kafka[k] = v
			}
			s, err := cfg.validate()
			require.NoError(t, err)
			assert.Equal(t, tc.want, s.reset)
			assert.Equal(t, "error", s.kafka["auto.offset.reset"])
			if dt, ok := s.kafka["default.topic.config"].(kafka.ConfigMap); ok {
				assert.NotContains(t, dt, "auto.offset.reset")
				assert.Equal(t, 1, dt["x"], "the rest of the topic configuration passes through")
			}
		})
	}
}
