package dlq

import (
	"errors"
	"strconv"
	"time"
)

// Record is a message as it was consumed from its source topic, independent of any Kafka client.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	// Timestamp is the message's Kafka timestamp; zero when it had none.
	Timestamp time.Time
	// Key, Value and Headers are the message's bytes; nil (a null key or value) and empty are
	// distinct and preserved.
	Key     []byte
	Value   []byte
	Headers []Header
}

// DeadLetter is a message that a consumer gave up on, with why, where and when. Its Record
// holds the original message; Record.Headers never holds a reserved header (see [HeaderPrefix]).
type DeadLetter struct {
	Record
	// ErrorClass groups failures that have the same cause, see [ErrorClass].
	ErrorClass string
	// ErrorMessage is the failure's text.
	ErrorMessage string
	// ConsumerID identifies the consumer instance that gave up.
	ConsumerID string
	// FailedAt is when it gave up, in UTC.
	FailedAt time.Time
	// ReplayCount is how many times the original message had been replayed from a dead-letter
	// topic before this failure.
	ReplayCount int
	// LostEnd is, on a letter of [ClassLost], one past the last lost offset: the letter stands
	// for the source offsets [Offset, LostEnd), whose records it does not hold. Zero on the
	// letter of a message.
	LostEnd int64
}

// NewDeadLetter builds the dead letter for rec failing with cause. ErrorClass comes from
// [ErrorClass] and ErrorMessage from cause.Error() (empty for a nil cause). The replay count is
// read from rec's [HeaderReplayCount] (a malformed one counts as 0) and every reserved header is
// left out of the letter's Record.Headers; rec itself is not modified. A cause that is (or
// wraps) a [*LostError] sets LostEnd. Messages can be long: dlqkafka's producer bounds them
// (its Config.MaxErrorMessage).
func NewDeadLetter(rec Record, cause error, consumerID string, failedAt time.Time) DeadLetter {
	d := DeadLetter{
		Record:     rec,
		ErrorClass: ErrorClass(cause),
		ConsumerID: consumerID,
		FailedAt:   failedAt.UTC(),
	}
	if cause != nil {
		d.ErrorMessage = cause.Error()
	}
	if le := (*LostError)(nil); errors.As(cause, &le) {
		d.LostEnd = le.To
	}
	if !rec.Timestamp.IsZero() {
		d.Timestamp = rec.Timestamp.UTC()
	}
	reserved := 0
	for _, h := range rec.Headers {
		if !isReserved(h.Key) {
			continue
		}
		reserved++
		if h.Key == HeaderReplayCount {
			if n, err := parseInt(HeaderReplayCount, h.Value, 31, ""); err == nil {
				d.ReplayCount = int(n)
			}
		}
	}
	if reserved > 0 {
		d.Record.Headers = make([]Header, 0, len(rec.Headers)-reserved)
		for _, h := range rec.Headers {
			if !isReserved(h.Key) {
				d.Record.Headers = append(d.Record.Headers, h)
			}
		}
	}
	return d
}

// String identifies the letter's original message as topic/partition@offset.
func (r Record) String() string {
	return r.Topic + "/" + strconv.FormatInt(int64(r.Partition), 10) + "@" + strconv.FormatInt(r.Offset, 10)
}
