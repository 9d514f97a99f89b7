package service

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// TopicRetention reads the retention.ms of topic from the broker: how far back the topic can
// redeliver, for [Config.SourceRetention]. A topic that keeps records forever
// (retention.ms = -1) returns [Forever].
func TopicRetention(ctx context.Context, km kafka.ConfigMap, topic string) (time.Duration, error) {
	cm := kafka.ConfigMap{}
	for k, v := range km {
		switch k {
		case "group.id", "enable.auto.commit", "enable.auto.offset.store", "auto.offset.reset":
			continue // consumer properties the admin client would warn about
		}
		cm[k] = v
	}
	ac, err := kafka.NewAdminClient(&cm)
	if err != nil {
		return 0, fmt.Errorf("service: retention of %s: %w", topic, err)
	}
	defer ac.Close()
	res, err := ac.DescribeConfigs(ctx, []kafka.ConfigResource{{Type: kafka.ResourceTopic, Name: topic}})
	if err != nil {
		return 0, fmt.Errorf("service: retention of %s: %w", topic, err)
	}
	if len(res) != 1 {
		return 0, fmt.Errorf("service: retention of %s: one result expected, found %d", topic, len(res))
	}
	if res[0].Error.Code() != kafka.ErrNoError {
		return 0, fmt.Errorf("service: retention of %s: %w", topic, res[0].Error)
	}
	e, ok := res[0].Config["retention.ms"]
	if !ok {
		return 0, fmt.Errorf("service: retention of %s: the broker did not report retention.ms", topic)
	}
	ms, err := strconv.ParseInt(e.Value, 10, 64)
	switch {
	case err != nil || ms < -1:
		return 0, fmt.Errorf("service: retention of %s: retention.ms expected to be -1 or milliseconds, found %q", topic, e.Value)
	case ms == -1:
		return Forever, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}
