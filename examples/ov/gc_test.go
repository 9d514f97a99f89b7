package main

import (
	"math"
	"runtime/debug"
	"testing"

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
	assert.Equal(t, int64(consumer.DefaultBufferLimit+gcRoom), limit)
	_, limit = setGC(1 << 30)
	assert.Equal(t, int64(1<<30+gcRoom), limit)

	debug.SetGCPercent(100)
	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOGC", "150")
	t.Setenv("GOMEMLIMIT", "1GiB")
	percent, limit = setGC(0)
	assert.Equal(t, 100, percent, "the environment wins")
	assert.Equal(t, int64(math.MaxInt64), limit)
}
