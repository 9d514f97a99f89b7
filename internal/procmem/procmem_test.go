package procmem

import (
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOutsideGo(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/status")
	}
	_, err := os.Stat("/proc/self/status")
	require.NoError(t, err)

	before := RSS()
	// Grow the Go heap: what the runtime holds is not outside it.
	hold := make([][]byte, 0, 64)
	for range 64 {
		b := make([]byte, 1<<20)
		for i := range b {
			b[i] = 1
		}
		hold = append(hold, b)
	}
	outside := OutsideGo()
	rss := RSS()
	runtime.KeepAlive(hold)

	assert.Positive(t, outside, "the binary's resident pages are outside the Go runtime")
	assert.Less(t, outside, rss-64<<20, "the 64 MiB the heap holds are not counted outside it")
	assert.GreaterOrEqual(t, rss, before+60<<20, "the resident set holds the touched heap")
	assert.GreaterOrEqual(t, Peak(), rss, "the peak is at least the resident set now")
}
