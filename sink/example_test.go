package sink_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/sinktest"
)

// countingSink is a sink of one's own built on another: it counts the state rows it is asked
// to write and writes them through sinktest.Memory. Embedding the concrete type keeps the
// optional interfaces of what it wraps (sink.GatedWindowWriter, sink.TableDescriber);
// embedding the sink.Sink interface would hide them from a consumer's type assertions.
type countingSink struct {
	*sinktest.Memory
	rows atomic.Int64 // safe for concurrent use, as a consumer's writes may run at once
}

func (c *countingSink) UpsertLatest(ctx context.Context, rows []sink.StateRow) error {
	c.rows.Add(int64(len(rows)))
	return c.Memory.UpsertLatest(ctx, rows)
}

// A sink implements the three writer and reader interfaces of sink.Sink, and is proven by
// sinktest.Run in its tests, with a factory that builds an empty one per setup:
//
//	sinktest.Run(t, func(t *testing.T, s sinktest.Setup) sinktest.Subject {
//		m, err := sinktest.NewMemory(sinktest.MemoryConfig{Aggregates: s.Aggregates, States: s.States, Clock: s.Clock, Horizon: s.Horizon})
//		require.NoError(t, err)
//		return &countingSink{Memory: m}
//	}, sinktest.Features{ConcurrentWriters: true})
//
// Here the sink writes a row twice, which stores it once, and refuses a row of a table it
// does not declare.
func Example_writingASink() {
	ctx := context.Background()
	m, err := sinktest.NewMemory(sinktest.MemoryConfig{States: []sink.StateSpec{{
		Table:      "device_latest",
		Key:        []sink.Column{{Name: "device_id", Type: sink.Text}},
		ObservedAt: sink.Column{Name: "observed_at", Type: sink.Timestamp},
		Values:     []sink.Column{{Name: "reading", Type: sink.Float64}},
	}}})
	if err != nil {
		panic(err)
	}
	var s sink.Sink = &countingSink{Memory: m}
	_, gated := s.(sink.GatedWindowWriter)
	_, described := s.(sink.TableDescriber)
	fmt.Println("gated:", gated, "describes its tables:", described)

	at := time.Date(2026, 3, 2, 7, 3, 0, 0, time.UTC)
	row := sink.StateRow{Table: "device_latest", Key: []any{"d-17"}, ObservedAt: at, Values: []any{21.5}}
	for range 2 { // a redelivery writes the same row again
		if err := s.UpsertLatest(ctx, []sink.StateRow{row}); err != nil {
			panic(err)
		}
	}
	stored, _, _ := m.Latest(ctx, "device_latest", "d-17")
	fmt.Println("rows asked:", s.(*countingSink).rows.Load(), "stored:", stored.Key[0], stored.Values[0])

	err = s.UpsertLatest(ctx, []sink.StateRow{{Table: "unknown", Key: []any{"d-17"}, ObservedAt: at}})
	fmt.Println("invalid:", errors.Is(err, sink.ErrInvalid), "transient:", sink.IsTransient(err))
	// Output:
	// gated: true describes its tables: true
	// rows asked: 2 stored: d-17 21.5
	// invalid: true transient: false
}
