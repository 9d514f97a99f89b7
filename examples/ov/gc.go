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
// runtime (at least half of base), or, where that is more, a quarter of the live heap above
// what a collection cannot free: the live heap, the unused space of the spans it lives in, and
// the runtime's memory outside the heap (stacks, metadata).
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
// quarter of the live heap's worth of garbage. The limit counts all the runtime holds, so a
// quarter above the live heap alone would leave a large live heap (a fold of every window at
// the end of a bounded run, say) little garbage to free per collection, and the collector
// would run back to back.
type heapFollower struct {
	base    int64
	heap    func() heapSizes        // the runtime's memory now
	outside func() int64            // resident memory outside the Go runtime; nil: none
	set     func(limit int64)       // sets the memory limit
	warn    func(limit, live int64) // called when the limit first rises above base; may be nil

	limit  int64
	warned bool
}

// followStep is the granularity of the limit heapFollower sets, so that the outside memory's
// small moves do not reset it at every step.
const followStep = 1 << 20

// heapSizes is what heapFollower reads of the runtime's memory.
type heapSizes struct {
	live int64 // the live heap, as the last collection marked it
	kept int64 // what a collection cannot free: the runtime's memory less garbage and free pages
}

// heapSamples returns the runtime/metrics samples readHeapSizes reads.
func heapSamples() []metrics.Sample {
	return []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"}, {Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"}}
}

// readHeapSizes reads the runtime's memory into s, made by heapSamples.
func readHeapSizes(s []metrics.Sample) heapSizes {
	metrics.Read(s)
	v := func(i int) int64 { return int64(s[i].Value.Uint64()) }
	live, held := v(0), v(1)-v(2)
	garbage := max(v(4)-live, 0) // objects allocated since the last collection, not all live
	return heapSizes{live: live, kept: max(held-v(3)-garbage, live)}
}

// step sets the limit for the heap and the outside memory now and returns it.
func (f *heapFollower) step() int64 {
	h := f.heap()
	live := h.live
	room := f.base
	if f.outside != nil {
		room = max(f.base-f.outside(), f.base/2) / followStep * followStep
	}
	want := max(room, h.kept+live/4)
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
	samples := heapSamples()
	f := &heapFollower{base: base, limit: base, warn: warn,
		heap:    func() heapSizes { return readHeapSizes(samples) },
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
