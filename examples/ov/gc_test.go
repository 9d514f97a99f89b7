package main

import (
	"context"
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/streamledger/streamledger/ledger/consumer"
)

func TestSetGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	percent, limit := setGC(0)
	assert.Equal(t, gcPercent, percent)
	assert.Equal(t, int64(consumer.DefaultBufferLimit), limit)
	_, limit = setGC(1 << 30)
	assert.Equal(t, int64(1<<30), limit)

	debug.SetGCPercent(100)
	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOGC", "150")
	t.Setenv("GOMEMLIMIT", "1GiB")
	percent, limit = setGC(0)
	assert.Equal(t, 100, percent, "the environment wins")
	assert.Equal(t, int64(math.MaxInt64), limit)
}

// The memory limit stays at its base less the memory outside Go (at least half the base)
// while what a collection cannot free fits a quarter of the live heap below it, follows a heap
// that outgrows it, and comes back as the heap falls.
func TestHeapFollower(t *testing.T) {
	const mib = 1 << 20
	var live, kept, outside, set int64
	var warned []int64
	f := &heapFollower{base: 320 * mib, limit: 320 * mib,
		heap:    func() heapSizes { return heapSizes{live: live, kept: max(kept, live)} },
		outside: func() int64 { return outside },
		set:     func(limit int64) { set = limit },
		warn:    func(limit, _ int64) { warned = append(warned, limit) },
	}
	for _, tc := range []struct {
		name                      string
		live, kept, outside, want int64
		set                       bool
	}{
		{"small live heap: base", 100 * mib, 0, 0, 320 * mib, false},
		{"a quarter below the base", 256 * mib, 0, 0, 320 * mib, false},
		{"outgrown: a quarter above", 300 * mib, 0, 0, 375 * mib, true},
		{"grows on", 480 * mib, 0, 0, 600 * mib, true},
		{"falls: lowered with it", 400 * mib, 0, 0, 500 * mib, true},
		{"back under: base again", 120 * mib, 0, 0, 320 * mib, true},
		{"memory outside Go: less room", 120 * mib, 0, 64 * mib, 256 * mib, true},
		{"a page more outside: a MiB less", 120 * mib, 0, 64*mib + 4096, 255 * mib, true},
		{"moves within the MiB: kept", 120 * mib, 0, 64*mib + 8192, 255 * mib, false},
		{"outside past half the base: half", 100 * mib, 0, 200 * mib, 160 * mib, true},
		{"the live heap wins over the room", 200 * mib, 0, 200 * mib, 250 * mib, true},
		{"outgrown again", 400 * mib, 0, 0, 500 * mib, true},
		{"what a collection cannot free counts", 240 * mib, 300 * mib, 0, 360 * mib, true},
		{"under the room with it: the room", 160 * mib, 200 * mib, 0, 320 * mib, true},
	} {
		live, kept, outside, set = tc.live, tc.kept, tc.outside, 0
		assert.Equal(t, tc.want, f.step(), tc.name)
		if tc.set {
			assert.Equal(t, tc.want, set, tc.name)
		} else {
			assert.Zero(t, set, "%s: the limit in force is not set again", tc.name)
		}
	}
	assert.Equal(t, []int64{375 * mib}, warned, "one warning, the first time the limit rises")
}

// The runtime's own figures: what a collection cannot free holds at least the live heap and at
// most what the runtime holds.
func TestReadHeapSizes(t *testing.T) {
	keep := make([][]byte, 64)
	for i := range keep {
		keep[i] = make([]byte, 64<<10)
	}
	runtime.GC()
	s := heapSamples()
	h := readHeapSizes(s)
	total, released := int64(s[1].Value.Uint64()), int64(s[2].Value.Uint64())
	assert.GreaterOrEqual(t, h.live, int64(len(keep)*64<<10), "the kept buffers are live")
	assert.GreaterOrEqual(t, h.kept, h.live)
	assert.LessOrEqual(t, h.kept, total-released)
	runtime.KeepAlive(keep)
}

// A limit set by GOMEMLIMIT, or none, is left alone.
func TestFollowLiveHeapLeavesAnExplicitLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for name, env := range map[string]string{"GOMEMLIMIT": "1MiB", "no limit": ""} {
		t.Setenv("GOMEMLIMIT", env)
		limit := int64(1 << 20) // below any live heap: a follower would raise it
		if env == "" {
			limit = math.MaxInt64
		}
		debug.SetMemoryLimit(limit)
		done := make(chan struct{})
		go func() { followLiveHeap(ctx, nil); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * followEvery):
			t.Fatalf("%s: followLiveHeap runs on", name)
		}
		assert.Equal(t, limit, debug.SetMemoryLimit(-1), name)
	}
}
