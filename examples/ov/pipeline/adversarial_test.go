package pipeline_test

import (
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/examples/ov/event"
	"github.com/streamledger/streamledger/examples/ov/feed"
	"github.com/streamledger/streamledger/examples/ov/pipeline"
)

// TestAdversarialInput feeds hostile messages through the processor's handlers, as the runtime
// calls them: each either decodes into an event the runtime accepts (Event.Validate) or fails
// with an error whose dead-letter class says why; none panics, and none is admitted with an
// event time or a value the windows cannot hold.
func TestAdversarialInput(t *testing.T) {
	dec, err := event.NewDecoder(event.Config{})
	require.NoError(t, err)
	handlers := pipeline.Handlers(feed.DefaultPositionsTopic, feed.DefaultPredictionsTopic, dec)
	broker := time.Date(2026, 3, 10, 6, 31, 20, 0, time.UTC)
	pred := `{"version":1,"trip_id":"GVB:20260310:17:1043","vehicle_id":"GVB:2045","line":"GVB:17","operator":"GVB",` +
		`"stop":"NL:Q:57002160","delay_s":123,"observed_at":"2026-03-10T06:31:12.345Z"}`
	pos := `{"version":1,"vehicle_id":"GVB:2045","trip_id":"GVB:20260310:17:1043","line":"GVB:17","operator":"GVB",` +
		`"lat":52.37,"lon":4.89,"bearing":87.5,"observed_at":"2026-03-10T06:31:12.345Z"}`
	sub := func(s, old, new string) string {
		require.Equal(t, 1, strings.Count(s, old), "fixture must hold %q once", old)
		return strings.Replace(s, old, new, 1)
	}
	cases := []struct {
		name     string
		topic    string
		key      []byte
		value    string
		noTS     bool   // the broker gave no timestamp: the checks against it are skipped
		class    string // empty: accepted
		accepted bool
	}{
		{name: "valid prediction", value: pred, accepted: true},
		{name: "empty key", key: []byte{}, value: pred, accepted: true},
		{name: "nil key and value", key: nil, value: "", class: event.ClassSyntax},
		{name: "huge message: 4 MiB of whitespace", value: pred[:len(pred)-1] + strings.Repeat(" ", 4<<20) + "}", accepted: true},
		{name: "huge message: 4 MiB id", value: sub(pred, `"GVB:2045"`, `"`+strings.Repeat("x", 4<<20)+`"`), class: event.ClassFormat},
		{name: "huge message: 100k unknown fields", value: sub(pred, `"delay_s":123`, `"delay_s":123`+strings.Repeat(`,"x":1`, 100_000)),
			class: event.ClassUnknownField},
		{name: "deeply nested arrays", value: strings.Repeat("[", 1_000_000) + strings.Repeat("]", 1_000_000), class: event.ClassSyntax},
		{name: "deeply nested in a field", value: sub(pred, `123`, strings.Repeat(`{"a":`, 500_000)+"1"+strings.Repeat("}", 500_000)),
			class: event.ClassSyntax},
		{name: "NaN", value: sub(pred, `123`, `NaN`), class: event.ClassSyntax},
		{name: "NaN as a string", value: sub(pred, `123`, `"NaN"`), class: event.ClassType},
		{name: "Infinity", value: sub(pred, `123`, `Infinity`), class: event.ClassSyntax},
		{name: "overflow to infinity", value: sub(pred, `123`, `1e999`), class: event.ClassType},
		{name: "coordinate overflow", topic: feed.DefaultPositionsTopic, value: sub(pos, `52.37`, `-1e999`), class: event.ClassRangeCoordinates},
		{name: "fractional delay", value: sub(pred, `123`, `1.5`), class: event.ClassType},
		{name: "absurd delay", value: sub(pred, `123`, `9007199254740993`), class: event.ClassRangeDelay},
		{name: "absurd negative delay", value: sub(pred, `123`, `-9007199254740993`), class: event.ClassRangeDelay},
		{name: "delay beyond int64", value: sub(pred, `123`, `99999999999999999999999`), class: event.ClassRangeDelay},
		{name: "delay just over 6 h", value: sub(pred, `123`, `21601`), class: event.ClassRangeDelay},
		{name: "negative delay", value: sub(pred, `123`, `-300`), accepted: true},
		{name: "year 0", value: sub(pred, `2026-03-10T06:31:12.345Z`, `0000-01-01T00:00:00Z`), class: event.ClassRangeTime},
		{name: "year 9999", value: sub(pred, `2026-03-10T06:31:12.345Z`, `9999-12-31T23:59:59Z`), class: event.ClassRangeTime},
		{name: "year 0 without a broker timestamp", value: sub(pred, `2026-03-10T06:31:12.345Z`, `0000-01-01T00:00:00Z`), noTS: true,
			class: event.ClassRangeTime},
		{name: "year 9999 without a broker timestamp", value: sub(pred, `2026-03-10T06:31:12.345Z`, `9999-12-31T23:59:59Z`), noTS: true,
			class: event.ClassRangeTime},
		{name: "year 10000", value: sub(pred, `2026-03-10T06:31:12.345Z`, `10000-01-01T00:00:00Z`), class: event.ClassFormat},
		{name: "version 0", value: sub(pred, `"version":1`, `"version":0`), class: event.ClassVersion},
		{name: "version 2", value: sub(pred, `"version":1`, `"version":2`), class: event.ClassVersion},
		{name: "version -1", value: sub(pred, `"version":1`, `"version":-1`), class: event.ClassVersion},
		{name: "version huge", value: sub(pred, `"version":1`, `"version":1e300`), class: event.ClassVersion},
		{name: "version null", value: sub(pred, `"version":1`, `"version":null`), class: event.ClassVersion},
		{name: "a position on the predictions topic", value: pos, class: event.ClassUnknownField},
		{name: "a prediction on the positions topic", topic: feed.DefaultPositionsTopic, value: pred, class: event.ClassUnknownField},
		{name: "invalid UTF-8", value: sub(pred, `GVB:2045`, "GVB:\xff\xfe"), class: event.ClassFormat},
		{name: "NUL byte", value: sub(pred, `GVB:2045`, "GVB:\x00"), class: event.ClassSyntax},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			topic := c.topic
			if topic == "" {
				topic = feed.DefaultPredictionsTopic
			}
			m := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic}, Key: c.key, Value: []byte(c.value),
				Timestamp: broker, TimestampType: kafka.TimestampCreateTime}
			if c.noTS {
				m.Timestamp, m.TimestampType = time.Time{}, kafka.TimestampNotAvailable
			}
			ev, err := handlers[topic](m)
			if c.accepted {
				require.NoError(t, err)
				require.NoError(t, ev.Validate(), "the runtime accepts the event")
				assert.True(t, ev.Time.Year() > 2000 && ev.Time.Year() < 3000, "event time %v", ev.Time)
				return
			}
			require.Error(t, err)
			assert.Equal(t, c.class, dlq.ErrorClass(err), "dead-letter class of %v", err)
			assert.Less(t, len(err.Error()), 1024, "the error stays short whatever the input: %.200s", err.Error())
		})
	}
}
