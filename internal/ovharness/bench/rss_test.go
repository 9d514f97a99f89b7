package bench

import (
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/procmem"
)

func TestSampleOutsideGo(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/status")
	}
	_, err := os.Stat("/proc/self/status")
	require.NoError(t, err)

	stop := sampleOutsideGo()
	hold := make([][]byte, 0, 64)
	for range 64 {
		b := make([]byte, 1<<20)
		for i := range b {
			b[i] = 1
		}
		hold = append(hold, b)
	}
	peak := stop()
	runtime.KeepAlive(hold)
	assert.Positive(t, peak)
	assert.LessOrEqual(t, peak, procmem.RSS(), "a part of the resident set")
}
