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
