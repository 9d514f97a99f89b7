package feed_test

import (
	"fmt"
	"time"

	"github.com/streamledger/streamledger/examples/ov/feed"
)

func ExampleGenerate() {
	recs, stats, err := feed.Generate(feed.Config{
		Seed:     42,
		Scale:    0.02, // a small network
		Start:    time.Date(2026, 3, 10, 8, 0, 0, 0, feed.CET()),
		Duration: 10 * time.Minute,
	})
	if err != nil {
		panic(err)
	}
	first := recs[0]
	fmt.Println(len(recs) == stats.Records, stats.Operators)
	fmt.Println(first.Topic == feed.DefaultPositionsTopic || first.Topic == feed.DefaultPredictionsTopic)
	fmt.Println(string(first.Key), "goes to partition", feed.Partition(first.Key, 8), "of 8")
	// Output:
	// true 9
	// true
	// GVB:1007 goes to partition 3 of 8
}
