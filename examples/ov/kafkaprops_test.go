package main

import (
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseKafkaProps(t *testing.T) {
	for _, tc := range []struct {
		name  string
		props string
		g     groupJoin
		want  kafka.ConfigMap
		err   string
	}{
		{name: "empty", want: kafka.ConfigMap{}},
		{name: "properties", props: " a=1, b = x=y ,", want: kafka.ConfigMap{"a": "1", "b": "x=y"}},
		{name: "no key", props: "=1", err: "without a key"},
		{name: "no equals hides the text", props: "secret", err: "want key=value"},
		{name: "classic assignor", g: groupJoin{assignor: "cooperative-sticky"},
			want: kafka.ConfigMap{"partition.assignment.strategy": "cooperative-sticky"}},
		{name: "unknown assignor", g: groupJoin{assignor: "sticky"}, err: "want range, roundrobin or cooperative-sticky"},
		{name: "remote assignor with classic", g: groupJoin{protocol: "classic", remoteAssignor: "range"}, err: "only with --group-protocol consumer"},
		{name: "consumer", props: "max.poll.interval.ms=20000", g: groupJoin{protocol: "consumer"},
			want: kafka.ConfigMap{"group.protocol": "consumer", "max.poll.interval.ms": "20000"}},
		{name: "consumer remote assignor", g: groupJoin{protocol: "consumer", remoteAssignor: "uniform"},
			want: kafka.ConfigMap{"group.protocol": "consumer", "group.remote.assignor": "uniform"}},
		{name: "consumer unknown remote assignor", g: groupJoin{protocol: "consumer", remoteAssignor: "sticky"}, err: "want uniform or range"},
		{name: "consumer with a client assignor", g: groupJoin{protocol: "consumer", assignor: "range"}, err: "use --remote-assignor"},
		{name: "consumer with a session timeout", props: "session.timeout.ms=6000", g: groupJoin{protocol: "consumer"},
			err: "session.timeout.ms: not with --group-protocol consumer"},
		{name: "consumer with a heartbeat", props: "heartbeat.interval.ms=500", g: groupJoin{protocol: "consumer"}, err: "heartbeat.interval.ms"},
		{name: "unknown protocol", g: groupJoin{protocol: "share"}, err: "want classic or consumer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseKafkaProps(tc.props, tc.g)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				assert.NotContains(t, err.Error(), "secret")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
