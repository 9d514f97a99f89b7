package main

import (
	"fmt"
	"strings"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// groupJoin is how "ov run" joins its consumer group.
type groupJoin struct {
	// protocol is group.protocol: "classic" (or empty) or "consumer" (KIP-848).
	protocol string
	// assignor is the classic protocol's partition.assignment.strategy; empty: librdkafka's.
	assignor string
	// remoteAssignor is KIP-848's group.remote.assignor (the broker's assignor); empty: the
	// broker's default.
	remoteAssignor string
}

// classicOnly are the librdkafka properties of the classic protocol that librdkafka refuses
// with group.protocol=consumer: the broker sets the session and heartbeat, and assigns.
var classicOnly = []string{"session.timeout.ms", "heartbeat.interval.ms", "partition.assignment.strategy", "group.protocol.type"}

// parseKafkaProps reads key=value[,key=value] into librdkafka properties and adds the group's.
func parseKafkaProps(s string, g groupJoin) (kafka.ConfigMap, error) {
	m := kafka.ConfigMap{}
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			// The text may be a secret: do not repeat it.
			return nil, fmt.Errorf("a kafka property without a key or '=': want key=value")
		}
		m[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	switch g.protocol {
	case "", "classic":
		if g.remoteAssignor != "" {
			return nil, fmt.Errorf("remote assignor %q: only with --group-protocol consumer", g.remoteAssignor)
		}
		switch g.assignor {
		case "":
		case "range", "roundrobin", "cooperative-sticky":
			m["partition.assignment.strategy"] = g.assignor
		default:
			return nil, fmt.Errorf("assignor %q: want range, roundrobin or cooperative-sticky", g.assignor)
		}
	case "consumer":
		if g.assignor != "" {
			return nil, fmt.Errorf("assignor %q: the consumer group protocol assigns on the broker; use --remote-assignor", g.assignor)
		}
		for _, k := range classicOnly {
			if _, ok := m[k]; ok {
				return nil, fmt.Errorf("kafka property %s: not with --group-protocol consumer, where the broker sets it", k)
			}
		}
		m["group.protocol"] = "consumer"
		switch g.remoteAssignor {
		case "":
		case "uniform", "range":
			m["group.remote.assignor"] = g.remoteAssignor
		default:
			return nil, fmt.Errorf("remote assignor %q: want uniform or range", g.remoteAssignor)
		}
	default:
		return nil, fmt.Errorf("group protocol %q: want classic or consumer", g.protocol)
	}
	return m, nil
}
