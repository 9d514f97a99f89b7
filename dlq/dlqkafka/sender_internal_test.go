package dlqkafka

import (
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProducerConfigChannelSizes(t *testing.T) {
	conf, err := producerConfig(kafka.ConfigMap{"bootstrap.servers": "b:9092"})
	require.NoError(t, err)
	assert.Equal(t, 1024, conf["go.events.channel.size"], "not a million entries")
	assert.Equal(t, 1, conf["go.produce.channel.size"], "the produce channel is unused")
	assert.Equal(t, "none", conf["go.delivery.report.fields"])

	conf, err = producerConfig(kafka.ConfigMap{"bootstrap.servers": "b:9092", "go.events.channel.size": 50000})
	require.NoError(t, err)
	assert.Equal(t, 50000, conf["go.events.channel.size"], "a size the user set is kept")
}

// A replay's cursor commits one past the longest prefix of done letters: a republished one
// is done when its delivery is confirmed, any other at once, whatever the order of the reports.
func TestCursorCommittable(t *testing.T) {
	c := newCursor(5, 20)
	assert.Equal(t, int64(5), c.committable(), "where the replay starts")
	require.NoError(t, c.decided(5, true))
	require.NoError(t, c.decided(6, false))
	require.NoError(t, c.decided(8, true)) // 7 holds no message
	require.NoError(t, c.decided(9, false))
	assert.Equal(t, int64(5), c.committable(), "5 waits for its report")
	require.NoError(t, c.led.Ack(8))
	assert.Equal(t, int64(5), c.committable())
	require.NoError(t, c.led.Ack(5))
	assert.Equal(t, int64(10), c.committable(), "everything decided is done")
	c.next = 14 // offsets 10-13 read as holding no message (transaction markers)
	assert.Equal(t, int64(14), c.committable())
	require.NoError(t, c.decided(19, false))
	assert.True(t, c.done, "read through its end")
}
