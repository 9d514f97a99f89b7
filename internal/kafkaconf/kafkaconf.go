package kafkaconf

import (
	"fmt"
	"strconv"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// ForcedError reports a user value that contradicts a forced property.
type ForcedError struct {
	Key         string
	Want, Found kafka.ConfigValue
}

func (e *ForcedError) Error() string {
	return fmt.Sprintf("Kafka[%q]: expected %v (or unset), found %v", e.Key, e.Want, e.Found)
}

// Apply returns a copy of user with every forced property set, and every default where user
// has no value. A user value that means something else than the forced one is a
// [*ForcedError]; user is never modified.
func Apply(user, forced, defaults kafka.ConfigMap) (kafka.ConfigMap, error) {
	out := make(kafka.ConfigMap, len(user)+len(forced)+len(defaults))
	for k, v := range user {
		out[k] = v
	}
	for k, want := range forced {
		if v, ok := user[k]; ok && !Same(v, want) {
			return nil, &ForcedError{Key: k, Want: want, Found: v}
		}
		out[k] = want
	}
	for k, v := range defaults {
		if _, ok := user[k]; !ok {
			out[k] = v
		}
	}
	return out, nil
}

// Same reports whether two configuration values mean the same to librdkafka: booleans by
// their truth ("false" is false), anything else by its printed form.
func Same(a, b kafka.ConfigValue) bool {
	if ab, ok := asBool(a); ok {
		bb, ok := asBool(b)
		return ok && ab == bb
	}
	return fmt.Sprint(a) == fmt.Sprint(b)
}

func asBool(v kafka.ConfigValue) (bool, bool) {
	switch v := v.(type) {
	case bool:
		return v, true
	case string:
		b, err := strconv.ParseBool(v)
		return b, err == nil
	}
	return false, false
}
