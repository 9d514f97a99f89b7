package bench

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

	stop := sampleOutsideGo()
	// Grow the Go heap while sampling: what the runtime holds is not outside it.
	hold := make([][]byte, 0, 64)
	for range 64 {
		b := make([]byte, 1<<20)
		for i := range b {
			b[i] = 1
		}
		hold = append(hold, b)
	}
	now := outsideGo()
	peak := stop()
	runtime.KeepAlive(hold)

	rss := rssNow()
	assert.Positive(t, now, "the binary's resident pages are outside the Go runtime")
	assert.Less(t, now, rss-64<<20, "the 64 MiB the heap holds are not counted outside it")
	assert.Positive(t, peak)
	assert.LessOrEqual(t, peak, rss, "a part of the resident set")
}
