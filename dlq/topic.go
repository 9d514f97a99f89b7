package dlq

import "fmt"

// DefaultTopic is the dead-letter topic of source: "dlq." + source.
func DefaultTopic(source string) string { return "dlq." + source }

// maxTopicLen is Kafka's limit on a topic name's length.
const maxTopicLen = 249

// ValidateTopic checks that name is a legal Kafka topic name: 1 to 249 characters from
// [a-zA-Z0-9._-], and neither "." nor "..". The error wraps [ErrInvalid].
func ValidateTopic(name string) error {
	if name == "" || name == "." || name == ".." || len(name) > maxTopicLen {
		return fmt.Errorf("%w: topic name %q: expected 1 to %d characters, not \".\" or \"..\"", ErrInvalid, name, maxTopicLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: topic name %q: expected only [a-zA-Z0-9._-], found %q at byte %d", ErrInvalid, name, c, i)
		}
	}
	return nil
}
