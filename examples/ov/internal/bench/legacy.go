package bench

import (
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/streamledger/streamledger/examples/ov/internal/event"
	"github.com/streamledger/streamledger/examples/ov/internal/feed"
	"github.com/streamledger/streamledger/examples/ov/internal/tables"
	"github.com/streamledger/streamledger/ledger/consumer"
)

// FormerHandlers returns the OV handlers as they were before the profile of the end-to-end run
// (one allocation for each slice of the event and of its state row), so that a run can
// measure the current ones against them on the same machine at the same moment.
func FormerHandlers() (func(topic string, current consumer.Handler[tables.Key]) consumer.Handler[tables.Key], error) {
	d, err := event.NewDecoder(event.Config{})
	if err != nil {
		return nil, err
	}
	brokerTime := func(m *kafka.Message) time.Time {
		if m.TimestampType == kafka.TimestampNotAvailable {
			return time.Time{}
		}
		return m.Timestamp
	}
	positions := func(m *kafka.Message) (consumer.Event[tables.Key], error) {
		p, err := d.DecodePosition(m.Value, brokerTime(m))
		if err != nil {
			return consumer.Event[tables.Key]{}, err
		}
		return consumer.Event[tables.Key]{
			Time:  p.ObservedAt,
			State: []consumer.StateRow{{Table: tables.VehiclesTable, StateRow: tables.VehicleRow(p)}},
		}, nil
	}
	predictions := func(m *kafka.Message) (consumer.Event[tables.Key], error) {
		p, err := d.DecodePrediction(m.Value, brokerTime(m))
		if err != nil {
			return consumer.Event[tables.Key]{}, err
		}
		keys := tables.KeysOf(p)
		return consumer.Event[tables.Key]{
			Time:   p.ObservedAt,
			Values: []consumer.Value[tables.Key]{{Value: float64(p.DelayS), Keys: keys[:]}},
			State:  []consumer.StateRow{{Table: tables.TripsTable, StateRow: tables.TripRow(p)}},
		}, nil
	}
	return func(topic string, current consumer.Handler[tables.Key]) consumer.Handler[tables.Key] {
		switch topic {
		case feed.DefaultPositionsTopic:
			return positions
		case feed.DefaultPredictionsTopic:
			return predictions
		}
		return current
	}, nil
}
