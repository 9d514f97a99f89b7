package oracle_test

import (
	"fmt"
	"time"

	"github.com/streamledger/streamledger/examples/ov/event"
	"github.com/streamledger/streamledger/examples/ov/feed"
	"github.com/streamledger/streamledger/internal/ovharness/oracle"
)

func ExampleCompute() {
	recs, _, err := feed.Generate(feed.Config{Seed: 5, Scale: 0.02, Start: time.Date(2026, 3, 10, 8, 0, 0, 0, feed.CET()),
		Duration: 30 * time.Minute, LateShare: 0.01, MalformedShare: 0.01})
	if err != nil {
		panic(err)
	}
	dec, err := event.NewDecoder(event.Config{})
	if err != nil {
		panic(err)
	}
	r, err := oracle.Compute(oracle.Config{PositionsTopic: feed.DefaultPositionsTopic, PredictionsTopic: feed.DefaultPredictionsTopic,
		Partitions: 4, WindowSize: 5 * time.Minute, Lateness: 2 * time.Minute, Decoder: dec}, recs)
	if err != nil {
		panic(err)
	}
	// What the tables hold once every record is decided and no partition went idle.
	rows, err := r.Aggregates(r.ClosableThrough())
	if err != nil {
		panic(err)
	}
	t := r.Total
	fmt.Println(t.Consumed == t.Admitted+t.Late+t.DeadLettered, int(t.DeadLettered) == len(r.DeadLetters))
	fmt.Println(len(rows) > 0, len(r.Vehicles) > 0, len(r.Trips) > 0)
	// Output:
	// true true
	// true true true
}
