package ledger_test

import (
	"fmt"
	"time"

	"github.com/streamledger/streamledger/ledger"
)

// A windowed consumer: each message waits for its 5-minute window to be written. The commit
// never passes a message whose window is still open, and carries the watermark to restore.
func Example_windowedConsumer() {
	const size, lateness = 5 * time.Minute, 2 * time.Minute
	tr := ledger.NewTracker()
	tp := ledger.TopicPartition{Topic: "events", Partition: 0}
	p, _ := tr.Assign(tp, -1)

	start := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	var maxEvent time.Time
	for offset, minute := range []int{1, 3, 4, 6, 9, 12} {
		eventTime := start.Add(time.Duration(minute) * time.Minute)
		end := eventTime.Truncate(size).Add(size)
		_ = p.Add(int64(offset), ledger.Window(end)) // before the watermark moves past this message
		if eventTime.After(maxEvent) {
			maxEvent = eventTime
		}
		wm := maxEvent.Add(-lateness)
		p.SetWatermark(wm)
		// The windows ending at or before wm close now; once the sink has written them with
		// closed_through = wm, the ledger is told.
		_ = p.CloseThrough(wm)
		for _, c := range tr.Commits() {
			cp, _ := ledger.DecodeMetadata(c.Metadata)
			fmt.Printf("after offset %d: commit %d, watermark %s\n", offset, c.Offset, cp.Watermark.Format("15:04"))
			tr.MarkCommitted(c) // once the broker accepted it
		}
	}
	fmt.Println("still pending:", p.Pending())
	// Output:
	// after offset 4: commit 3, watermark 12:02
	// after offset 5: commit 5, watermark 12:07
	// still pending: 1
}

// A plain service that hands messages to workers finishing out of order. It commits the
// longest prefix of finished work, so a crash redoes only unfinished messages.
func Example_asyncAcks() {
	p := ledger.NewPartition()
	for offset := int64(100); offset < 105; offset++ {
		_ = p.Add(offset, ledger.Ack())
	}
	for _, done := range []int64{102, 100, 104, 101, 103} {
		_ = p.Ack(done) // in a real service: sent back from the worker to the consuming loop
		off, ok := p.Committable()
		fmt.Printf("finished %d: committable %d (%v), pending %d\n", done, off, ok, p.Pending())
	}
	// Output:
	// finished 102: committable -1 (false), pending 5
	// finished 100: committable 101 (true), pending 4
	// finished 104: committable 101 (true), pending 4
	// finished 101: committable 103 (true), pending 2
	// finished 103: committable 105 (true), pending 0
}
