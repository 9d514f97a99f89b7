package bench

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/streamledger/streamledger/internal/procmem"
)

// The sampler keeps the largest of its samples of procmem.OutsideGo.
func TestSampleOutsideGo(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/status")
	}
	stop := sampleOutsideGo()
	time.Sleep(3 * outsideGoEvery)
	peak := stop()
	assert.Positive(t, peak, "the binary's resident pages are outside the Go runtime")
	assert.LessOrEqual(t, peak, procmem.RSS(), "a part of the resident set")
}
