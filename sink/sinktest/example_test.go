package sinktest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/sinktest"
	"github.com/streamledger/streamledger/window"
)

// A processor's unit test writes through a Memory, makes a write fail, and checks what was
// recorded: a failed write records nothing, so the processor must not commit past it.
func ExampleMemory() {
	ctx := context.Background()
	m, err := sinktest.NewMemory(sinktest.MemoryConfig{})
	if err != nil {
		panic(err)
	}
	s := window.NewStats()
	for _, v := range []float64{60, 90, 300, 60, 90, 300, 60, 90, 300, 90} {
		_ = s.Add(v)
	}
	stats, _ := s.MarshalBinary()
	start, end := window.Bounds(time.Date(2026, 3, 2, 7, 3, 0, 0, time.UTC), 5*time.Minute)
	b := sink.CloseBatch{
		Source:        sink.TopicPartition{Topic: "events", Partition: 0},
		ClosedThrough: end,
		Partials:      []sink.Partial{{Key: sink.Key{WindowStart: start, Dimension: "device", DimensionID: "d-17"}, WindowEnd: end, Stats: stats}},
	}

	m.FailNext(errors.New("connection reset"))
	fmt.Println("first write:", m.WriteClose(ctx, b))
	fmt.Println("recorded:", len(m.Closes()))

	fmt.Println("second write:", m.WriteClose(ctx, b))
	row, _, _ := m.Aggregate(ctx, b.Partials[0].Key)
	fmt.Println("recorded:", len(m.Closes()), "row:", row.Count, row.Mean, row.Quantile)
	// Output:
	// first write: connection reset
	// recorded: 0
	// second write: <nil>
	// recorded: 1 row: 10 144 300
}
