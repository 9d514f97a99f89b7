package event_test

import (
	"fmt"
	"time"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/examples/ov/event"
)

func ExampleDecoder_DecodePrediction() {
	d, err := event.NewDecoder(event.Config{}) // the Netherlands, ±6 h of delay
	if err != nil {
		panic(err)
	}
	brokerTS := time.Date(2026, 3, 10, 6, 31, 20, 0, time.UTC)

	p, err := d.DecodePrediction([]byte(`{"version":1,"trip_id":"RET:20260310:D:311","vehicle_id":"RET:5410",`+
		`"line":"RET:D","operator":"RET","stop":"NL:Q:31001234","delay_s":240,"observed_at":"2026-03-10T06:31:12Z"}`), brokerTS)
	fmt.Println(p.Line, p.Stop, p.DelayS, p.Late(), err)

	_, err = d.DecodePrediction([]byte(`{"version":1,"trip_id":"RET:20260310:D:311","delay_s":"240"}`), brokerTS)
	fmt.Println(dlq.ErrorClass(err))
	fmt.Println(err)

	_, err = d.DecodePrediction([]byte(`{"version":2,"trip_id":"RET:20260310:D:311","delay_s":240,"cause":"signal failure"}`), brokerTS)
	fmt.Println(dlq.ErrorClass(err))
	// Output:
	// RET:D NL:Q:31001234 240 true <nil>
	// schema.type
	// event: field "delay_s": an integer expected, found a string
	// schema.version
}
