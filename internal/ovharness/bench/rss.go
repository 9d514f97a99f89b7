package bench

import (
	"time"

	"github.com/streamledger/streamledger/internal/procmem"
)

// outsideGoEvery is how often sampleOutsideGo samples.
const outsideGoEvery = 250 * time.Millisecond

// sampleOutsideGo samples procmem.OutsideGo every outsideGoEvery until stop is called: the
// client's C heap, the C allocator's arenas, the binary and the threads' stacks. stop returns
// the largest sample, 0 where /proc is missing.
func sampleOutsideGo() (stop func() uint64) {
	done, finished := make(chan struct{}), make(chan struct{})
	var peak uint64
	go func() {
		defer close(finished)
		t := time.NewTicker(outsideGoEvery)
		defer t.Stop()
		for {
			peak = max(peak, procmem.OutsideGo())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-finished
		return peak
	}
}
