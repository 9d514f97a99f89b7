package consumer

import (
	"fmt"
	"math"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/window"
)

// Handler decodes one message of a topic and says what it does. It runs on the consumer's
// loop, once per delivery of the message (a redelivered message is decoded again), and must
// be a pure function of the message: a replay must get the same [Event].
//
// An error means the message cannot be handled: it is dead-lettered (see
// [Config.DeadLetters]). The same happens to an Event that [Event.Validate] rejects.
type Handler[K comparable] func(m *kafka.Message) (Event[K], error)

// Event is what one decoded message does.
//
// The zero Event does nothing: the message is admitted and its offset is durable at once
// (a message the processor filters out, for example).
type Event[K comparable] struct {
	// Time is the event time, from the payload. It moves the partition's watermark. Zero means
	// the message has no event time; it may then have no Values.
	Time time.Time
	// Values are the event's window contributions: each adds Value under each of Keys to the
	// window containing Time. An event whose window is already closed (late) contributes
	// nothing, and neither are its State rows applied.
	Values []Value[K]
	// State holds last-write-wins rows, written at the next state flush.
	State []StateRow
}

// Value is one window contribution: Value added once under each of Keys (the line, station,
// operator and network of one arrival, for example).
type Value[K comparable] struct {
	Value float64
	Keys  []K
}

// StateRow is one last-write-wins row for the state table Table.
type StateRow struct {
	Table string
	sink.StateRow
}

// SinkKey is where a window key's aggregates go in the sink: the merged row
// (dimension, dimension_id) and its optional attributes (the seed's operator).
type SinkKey struct {
	Dimension   string
	DimensionID string
	// Attrs holds optional attributes by name; a missing name never erases a stored value.
	Attrs map[string]string
}

// Validate reports whether the event can be applied as a whole: values finite and within
// [window.MaxValue], an event time when there are values, at least one key per value, and a
// table name per state row. The runtime checks this before applying anything, so that an
// event is either applied whole or dead-lettered.
func (e Event[K]) Validate() error {
	if len(e.Values) > 0 && e.Time.IsZero() {
		return &EventError{Reason: "an event with window values needs an event time"}
	}
	if len(e.Values) > 0 {
		if y := e.Time.UTC().Year(); y < 1678 || y > 2261 {
			return &EventError{Reason: "event time " + e.Time.UTC().Format(time.RFC3339) + " is outside the years 1678-2261"}
		}
	}
	for i, v := range e.Values {
		if err := checkValue(v.Value); err != nil {
			return &EventError{Reason: fmt.Sprintf("value %d: %v", i, err)}
		}
		if len(v.Keys) == 0 {
			return &EventError{Reason: fmt.Sprintf("value %d has no key", i)}
		}
	}
	for i, r := range e.State {
		if r.Table == "" {
			return &EventError{Reason: fmt.Sprintf("state row %d names no table", i)}
		}
	}
	return nil
}

// EventError is an [Event] that cannot be applied; the message is dead-lettered with it.
type EventError struct {
	Reason string
}

func (e *EventError) Error() string { return "consumer: invalid event: " + e.Reason }

// ErrorClass groups these failures in dead-letter reports (see dlq.Classifier).
func (e *EventError) ErrorClass() string { return "consumer.invalid-event" }

func checkValue(v float64) error {
	switch {
	case math.IsNaN(v):
		return fmt.Errorf("expected a number, found NaN")
	case math.IsInf(v, 0) || math.Abs(v) > window.MaxValue:
		return fmt.Errorf("expected a magnitude of at most %g, found %g", window.MaxValue, v)
	}
	return nil
}
