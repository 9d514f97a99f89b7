package sink_test

import (
	"fmt"
	"time"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/window"
)

// A batch of last-write-wins rows is collapsed to the newest row per key before it is sent,
// (the newest row per key).
func ExamplePrepareLatest() {
	spec := sink.StateSpec{
		Table:      "vehicle_latest",
		Key:        []sink.Column{{Name: "vehicle_id"}},
		ObservedAt: sink.Column{Name: "observed_at"},
		Values:     []sink.Column{{Name: "delay_s"}},
	}
	at := time.Date(2026, 3, 2, 7, 0, 0, 0, time.UTC)
	groups, err := sink.PrepareLatest([]sink.StateRow{
		{Table: "vehicle_latest", Key: []any{"bus-1"}, ObservedAt: at.Add(time.Minute), Values: []any{42.0}},
		{Table: "vehicle_latest", Key: []any{"bus-1"}, ObservedAt: at, Values: []any{7.0}}, // older: dropped
		{Table: "vehicle_latest", Key: []any{"bus-2"}, ObservedAt: at, Values: []any{0.0}},
	}, func(table string) (sink.StateSpec, bool) { return spec, table == spec.Table })
	if err != nil {
		panic(err)
	}
	for _, r := range groups[0] {
		fmt.Println(r.Key[0], r.ObservedAt.Format("15:04"), r.Values[0])
	}
	// Output:
	// bus-1 07:01 42
	// bus-2 07:00 0
}

// Merging the partials of one key, in (topic, partition) order, gives the merged row's
// numbers by the spec's quantile definition.
func ExampleAggregateSpec_SummarizePartials() {
	var parts [][]byte
	for _, vals := range [][]float64{{60, 90, 300, 60}, {90, 120, 45, 30, 300, 90}} {
		s := window.NewStats()
		for _, v := range vals {
			if err := s.Add(v); err != nil {
				panic(err)
			}
		}
		b, err := s.MarshalBinary()
		if err != nil {
			panic(err)
		}
		parts = append(parts, b)
	}
	for _, spec := range []sink.AggregateSpec{
		{Quantile: 0.75}, // window.Linear: PostgreSQL's percentile_cont
		{Quantile: 0.75, QuantileMethod: window.NearestRank}, // percentile_disc
	} {
		sum, err := spec.SummarizePartials(parts...)
		if err != nil {
			panic(err)
		}
		fmt.Println(spec.QuantileMethod, sum.Count, sum.Mean, sum.Quantile, sum.Max, sum.Min)
	}
	// Output:
	// linear 10 118.5 112.5 300 30
	// nearest-rank 10 118.5 120 300 30
}

func ExampleRetryPolicy_Backoff() {
	p := sink.RetryPolicy{MaxAttempts: 5, InitialBackoff: 50 * time.Millisecond, MaxBackoff: 300 * time.Millisecond}
	for n := 1; n < p.MaxAttempts; n++ {
		fmt.Println(p.Backoff(n))
	}
	// Output:
	// 50ms
	// 100ms
	// 200ms
	// 300ms
}
