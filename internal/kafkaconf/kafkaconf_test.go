package kafkaconf

import (
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestApply(t *testing.T) {
	forced := kafka.ConfigMap{"enable.auto.commit": false, "acks": "all"}
	defaults := kafka.ConfigMap{"fetch.wait.max.ms": 100, "linger.ms": 5}
	for _, tc := range []struct {
		name string
		user kafka.ConfigMap
		want kafka.ConfigMap
		err  string
	}{
		{"empty", kafka.ConfigMap{}, kafka.ConfigMap{"enable.auto.commit": false, "acks": "all", "fetch.wait.max.ms": 100, "linger.ms": 5}, ""},
		{"agreeing values kept as forced", kafka.ConfigMap{"enable.auto.commit": "false", "acks": "all", "linger.ms": 50},
			kafka.ConfigMap{"enable.auto.commit": false, "acks": "all", "fetch.wait.max.ms": 100, "linger.ms": 50}, ""},
		{"a contradiction", kafka.ConfigMap{"enable.auto.commit": "true"}, nil, `Kafka["enable.auto.commit"]: expected false (or unset), found true`},
		{"another", kafka.ConfigMap{"acks": 1}, nil, `Kafka["acks"]: expected all (or unset), found 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Apply(tc.user, forced, defaults)
			if tc.err != "" {
				var fe *ForcedError
				require.ErrorAs(t, err, &fe)
				assert.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestSame(t *testing.T) {
	assert.True(t, Same(false, "false"))
	assert.True(t, Same("0", false))
	assert.False(t, Same(true, "false"))
	assert.False(t, Same(true, "yes"))
	assert.True(t, Same(5, "5"))
	assert.False(t, Same("none", "all"))
}
