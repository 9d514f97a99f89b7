package tables_test

import (
	"fmt"

	"github.com/streamledger/streamledger/examples/ov/event"
	"github.com/streamledger/streamledger/examples/ov/tables"
)

func ExampleKeysOf() {
	p := event.Prediction{TripID: "RET:20260310:D:311", Line: "RET:D", Operator: "RET", Stop: "NL:Q:31001234", DelayS: 240}
	for _, k := range tables.KeysOf(p) {
		fmt.Printf("%s=%s operator=%q\n", k.Dimension, k.ID, k.Operator)
	}
	a := tables.Aggregates()
	fmt.Println(a.Table, a.Attributes, a.Columns.Count, a.Columns.Mean, a.Columns.Quantile, a.Columns.Max, a.Columns.Min)
	// Output:
	// line=RET:D operator="RET"
	// station=NL:Q:31001234 operator=""
	// operator=RET operator="RET"
	// network=NL operator=""
	// delay_aggregates [operator] event_count mean_delay_s p90_delay_s max_delay_s min_delay_s
}
