package main

import (
	"context"
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/streamledger/streamledger/internal/procmem"
	"github.com/streamledger/streamledger/ledger/consumer"
)

// gcPercent is the GOGC of a processor: its live heap (open windows, buffered rows) is small
// beside what it allocates per message (the client's copies, decoded events), so collecting at
// every doubling of the heap would spend a quarter of its CPU on the garbage collector.
const gcPercent = 400

// setGC sets the garbage collector of a processor whose BufferLimit is limit (zero: the
// runtime's default; negative: none): GOGC 400, and a Go memory limit of the bound, so that
// the heap stays near the bound however high GOGC lets it grow. The consumer keeps what it
// estimates within the bound less the client's share, with room beside it for the collector;
// followLiveHeap then lowers the Go limit by the memory outside the Go runtime (the client's C
// heap, the binary), so that the whole process keeps near the bound. GOGC and GOMEMLIMIT in
// the environment win. It returns the settings in force.
func setGC(limit int64) (percent int, memLimit int64) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if limit == 0 {
		limit = consumer.DefaultBufferLimit
	}
	if os.Getenv("GOMEMLIMIT") == "" && limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	percent = debug.SetGCPercent(-1)
	debug.SetGCPercent(percent)
	return percent, debug.SetMemoryLimit(-1)
}

// followEvery is how often followLiveHeap compares the memory limit with the live heap.
const followEvery = 250 * time.Millisecond

// heapFollower keeps a Go memory limit of base less the resident memory outside the Go
// runtime (at least half of base), or a quarter above the live heap where that is more.
//
// Base is the bound of the whole process: Go's limit counts only what the runtime maps, while
// the client's C heap and the binary are resident beside it, so a Go limit of base alone lets
// the process grow past base by all of that.
//
// The buffer bound holds what the consumer can write and drop, but not the open windows,
// which close only as the watermark passes: where they outgrow the bound, the live heap
// stays above a limit set from it, and the collector then runs back to back, at up to half
// the CPU (the runtime's cap), without freeing anything. Following the live heap leaves the
// limit at its room whenever the bound holds, and otherwise lets each collection free a
// quarter of the live heap's worth of garbage.
type heapFollower struct {
	base    int64
	live    func() int64            // the live heap, as the last collection marked it
	outside func() int64            // resident memory outside the Go runtime; nil: none
	set     func(limit int64)       // sets the memory limit
	warn    func(limit, live int64) // called when the limit first rises above base; may be nil

	limit  int64
	warned bool
}

// followStep is the granularity of the limit heapFollower sets, so that the outside memory's
// small moves do not reset it at every step.
const followStep = 1 << 20

// step sets the limit for the live heap and the outside memory now and returns it.
func (f *heapFollower) step() int64 {
	live := f.live()
	room := f.base
	if f.outside != nil {
		room = max(f.base-f.outside(), f.base/2) / followStep * followStep
	}
	want := max(room, live+live/4)
	if want != f.limit {
		f.limit = want
		f.set(want)
		if want > f.base && !f.warned && f.warn != nil {
			f.warned = true
			f.warn(want, live)
		}
	}
	return want
}

// followLiveHeap runs a heapFollower of the memory limit in force until ctx ends. It does
// nothing where no limit is set, or where GOMEMLIMIT sets it: a limit given explicitly is
// kept as it is.
func followLiveHeap(ctx context.Context, warn func(limit, live int64)) {
	base := debug.SetMemoryLimit(-1)
	if base == math.MaxInt64 || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	f := &heapFollower{base: base, limit: base, warn: warn,
		live: func() int64 {
			metrics.Read(sample)
			return int64(sample[0].Value.Uint64())
		},
		outside: func() int64 { return int64(procmem.OutsideGo()) },
		set:     func(limit int64) { debug.SetMemoryLimit(limit) },
	}
	t := time.NewTicker(followEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f.step()
		}
	}
}
