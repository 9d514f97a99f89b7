package main

import (
	"os"
	"runtime/debug"

	"github.com/streamledger/streamledger/ledger/consumer"
)

// gcPercent is the GOGC of a processor: its live heap (open windows, buffered rows) is small
// beside what it allocates per message (the client's copies, decoded events), so collecting at
// every doubling of the heap would spend a quarter of its CPU on the garbage collector.
const gcPercent = 400

// gcRoom is what a processor's Go memory limit leaves beside its buffer bound: the client's
// Go side, the sink's connections, the program itself.
const gcRoom = 64 << 20

// setGC sets the garbage collector of a processor whose BufferLimit is limit (zero: the
// runtime's default; negative: none): GOGC 400, and a Go memory limit of the bound plus
// gcRoom, so that the heap stays near the bound however high GOGC lets it grow. GOGC and
// GOMEMLIMIT in the environment win. It returns the settings in force.
func setGC(limit int64) (percent int, memLimit int64) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if limit == 0 {
		limit = consumer.DefaultBufferLimit
	}
	if os.Getenv("GOMEMLIMIT") == "" && limit > 0 {
		debug.SetMemoryLimit(limit + gcRoom)
	}
	percent = debug.SetGCPercent(-1)
	debug.SetGCPercent(percent)
	return percent, debug.SetMemoryLimit(-1)
}
