package watermark_test

import (
	"fmt"
	"time"

	"github.com/streamledger/streamledger/watermark"
)

// windowEnd is the end of the 5-minute window holding t.
func windowEnd(t time.Time) time.Time {
	const size = 5 * time.Minute
	return t.Truncate(size).Add(size)
}

// The per-event path: decide lateness against wm(P) before the event, then
// apply it.
func Example() {
	p := watermark.NewPartition(watermark.Config{}) // 120 s lateness
	arrival := time.Now()                           // read once per poll batch, not per event
	base := time.Date(2024, 5, 13, 12, 0, 0, 0, time.UTC)
	for _, minute := range []int{3, 9, 4, 6} {
		e := base.Add(time.Duration(minute) * time.Minute)
		late := p.IsLate(windowEnd(e))
		p.Observe(e, arrival)
		wm, _ := p.Watermark()
		fmt.Printf("event %s late=%-5t wm=%s\n", e.Format("15:04"), late, wm.Format("15:04"))
	}
	// Output:
	// event 12:03 late=false wm=12:01
	// event 12:09 late=false wm=12:07
	// event 12:04 late=true  wm=12:07
	// event 12:06 late=false wm=12:07
}

// After an assignment, wm(P) = max(wm as of the committed offset, from the
// commit metadata, and closed_through(P), from the sink). Garbled metadata is
// left zero.
func ExamplePartition_Restore() {
	base := time.Date(2024, 5, 13, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		from watermark.RestorePoint
	}{
		{"metadata ahead", watermark.RestorePoint{Metadata: base.Add(8 * time.Minute), ClosedThrough: base.Add(5 * time.Minute)}},
		{"progress ahead", watermark.RestorePoint{Metadata: base.Add(3 * time.Minute), ClosedThrough: base.Add(5 * time.Minute)}},
		{"garbled metadata", watermark.RestorePoint{ClosedThrough: base.Add(5 * time.Minute)}},
		{"nothing", watermark.RestorePoint{}},
	}
	for _, c := range cases {
		p := watermark.NewPartition(watermark.Config{})
		if err := p.Restore(c.from); err != nil {
			panic(err)
		}
		if wm, ok := p.Watermark(); ok {
			fmt.Printf("%-16s wm=%s late(12:05)=%t\n", c.name, wm.Format("15:04"), p.IsLate(base.Add(5*time.Minute)))
		} else {
			fmt.Printf("%-16s wm unknown: a fresh partition\n", c.name)
		}
	}
	// Output:
	// metadata ahead   wm=12:08 late(12:05)=true
	// progress ahead   wm=12:05 late(12:05)=true
	// garbled metadata wm=12:05 late(12:05)=true
	// nothing          wm unknown: a fresh partition
}

// A caught-up partition that stays quiet becomes idle, and its watermark
// keeps pace with the clock from its last message.
func ExamplePartition_Tick() {
	now := time.Date(2024, 5, 13, 12, 8, 0, 0, time.UTC) // the wall clock
	clock := func() time.Time { return now }
	p := watermark.NewPartition(watermark.Config{IdleTimeout: time.Minute, Clock: clock})

	p.Observe(time.Date(2024, 5, 13, 12, 7, 0, 0, time.UTC), now)
	if err := p.SetPosition(100, 100); err != nil { // nothing unread
		panic(err)
	}
	for _, wait := range []time.Duration{30 * time.Second, 30 * time.Second, 5 * time.Minute} {
		now = now.Add(wait)
		advanced := p.Tick()
		wm, _ := p.Watermark()
		fmt.Printf("now %s idle=%-5t advanced=%-5t wm=%s\n", now.Format("15:04:05"), p.Idle(), advanced, wm.Format("15:04:05"))
	}
	// The advance must reach P's progress before the next message is decided.
	fmt.Println("window ending 12:10 late:", p.IsLate(time.Date(2024, 5, 13, 12, 10, 0, 0, time.UTC)))
	p.Observe(time.Date(2024, 5, 13, 12, 9, 0, 0, time.UTC), now)
	fmt.Println("idle after a message:", p.Idle())
	// Output:
	// now 12:08:30 idle=false advanced=false wm=12:05:00
	// now 12:09:00 idle=true  advanced=true  wm=12:06:00
	// now 12:14:00 idle=true  advanced=true  wm=12:11:00
	// window ending 12:10 late: true
	// idle after a message: false
}

// The global watermark is the minimum over active partitions, for the
// readiness of merged results only.
func ExampleSet_Min() {
	now := time.Date(2024, 5, 13, 12, 20, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	set := watermark.NewSet[int32](watermark.Config{Clock: clock})
	base := time.Date(2024, 5, 13, 12, 0, 0, 0, time.UTC)

	for partition, minute := range []int{17, 9, 14} {
		p, _ := set.Assign(int32(partition), watermark.RestorePoint{})
		p.Observe(base.Add(time.Duration(minute)*time.Minute), now)
	}
	wm, _ := set.Min()
	fmt.Println("min over 3 active:", wm.Format("15:04"))

	quiet, _ := set.Partition(1)
	quiet.SetCaughtUp(true)
	now = now.Add(30 * time.Second) // the default idle timeout
	fmt.Println("idle advance in:", set.Tick())
	wm, _ = set.Min()
	fmt.Println("min with partition 1 idle:", wm.Format("15:04"))
	// Output:
	// min over 3 active: 12:07
	// idle advance in: [1]
	// min with partition 1 idle: 12:12
}
