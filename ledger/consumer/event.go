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
// workers, once per delivery of the message (a redelivered message is decoded again), possibly
// on several messages of the same partition at once, ahead of their decisions. So it must be
// safe for concurrent use and a pure function of the message: a replay must get the same
// [Event]. It must not keep the message, which the runtime drops once it is decided.
//
// An error means the message cannot be handled: it is dead-lettered (see
// [Config.DeadLetters]). The same happens to an Event that [Event.Validate] rejects.
type Handler[K comparable] func(m *kafka.Message) (Event[K], error)

// Event is what one decoded message does.
//
// The zero Event does nothing: the message is admitted and its offset is durable at once
// (a message the handler filters out, for example).
type Event[K comparable] struct {
	// Time is the event time, from the payload. It moves the partition's watermark. Zero means
	// the message has no event time; it may then have no Values.
	Time time.Time
	// Values are the event's window contributions: each adds Value under each of Keys to the
	// window containing Time. An event whose window is already closed (late) contributes
	// nothing, and neither are its State rows applied.
	Values []Value[K]
	// State holds last-write-wins rows, written at the next state flush. Until then the
	// partition keeps one row per (table, key), the latest by ObservedAt (a tie: the later
	// message's), which is the row the flush would write from all of them; so the memory of
	// the buffer grows with the keys updated between flushes, not with the messages.
	State []sink.StateRow
	// Effect, if not nil, is the message's effect that is not naturally idempotent (a balance
	// credit, a payment record), for [Config.ApplyEffects]: the runtime hands it, with the
	// effects of the messages around it in the partition, in offset order, to one call of
	// ApplyEffects, which commits them (for example in one database transaction holding an
	// operation marker per effect, as sink/postgres Effects.Apply does). It does so when it
	// decides the messages, before any of them enters the ledger, once per delivery, and
	// their entries are durable at once: the offsets are committed at the next tick. A
	// redelivered message is applied again, so ApplyEffects must recognise an earlier success
	// (the marker) and do nothing. The value is the handler's, passed as it is, and must be
	// a pure function of the message like the rest of the Event.
	//
	// An event with an Effect has no Values and no State: a message is either a window
	// contribution or an effect, never both (the late test, which withholds a late event's
	// contribution, has nothing to judge for an effect).
	Effect any
}

// Effect is one message's effect in a batch handed to [Config.ApplyEffects].
type Effect struct {
	// Message is the message the effect comes from. It is valid only during the call.
	Message *kafka.Message
	// Value is the message's [Event.Effect].
	Value any
}

// Value is one window contribution: Value added once under each of Keys (for example, a
// request's latency under its endpoint, its service and its region).
type Value[K comparable] struct {
	Value float64
	Keys  []K
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
	if e.Effect != nil && (len(e.Values) > 0 || len(e.State) > 0) {
		return &EventError{Reason: "an event with an effect has neither window values nor state rows"}
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

// checkStateRows checks state rows against the sink's specs: a declared table, and as many
// key and value columns as it has.
func checkStateRows(rows []sink.StateRow, specs map[string]sink.StateSpec) error {
	for i, r := range rows {
		spec, ok := specs[r.Table]
		switch {
		case !ok:
			return &EventError{Reason: fmt.Sprintf("state row %d: the sink declares no table %q", i, r.Table)}
		case len(r.Key) != len(spec.Key):
			return &EventError{Reason: fmt.Sprintf("state row %d for %q: %d key values, the table has %d key columns", i, r.Table, len(r.Key), len(spec.Key))}
		case len(r.Values) != len(spec.Values):
			return &EventError{Reason: fmt.Sprintf("state row %d for %q: %d values, the table has %d value columns", i, r.Table, len(r.Values), len(spec.Values))}
		case r.ObservedAt.IsZero():
			return &EventError{Reason: fmt.Sprintf("state row %d for %q has no observed-at time", i, r.Table)}
		}
	}
	return nil
}
