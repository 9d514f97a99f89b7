package bench

import (
	"bufio"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// peakRSS is the process's peak resident set (VmHWM), in bytes; 0 where /proc is missing.
func peakRSS() uint64 { return procStatus("VmHWM:") }

// rssNow is the process's resident set (VmRSS), in bytes.
func rssNow() uint64 { return procStatus("VmRSS:") }

// resetPeakRSS resets VmHWM to the current RSS (Linux: "5" to /proc/self/clear_refs), so that
// the peak of a phase is its own. It does nothing where that is not allowed.
func resetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

func procStatus(field string) uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, field) {
			continue
		}
		fs := strings.Fields(line[len(field):])
		if len(fs) == 0 {
			return 0
		}
		kb, err := strconv.ParseUint(fs[0], 10, 64)
		if err != nil {
			return 0
		}
		return kb * 1024
	}
	return 0
}

// outsideGoEvery is how often sampleOutsideGo samples.
const outsideGoEvery = 250 * time.Millisecond

// sampleOutsideGo samples, every outsideGoEvery until stop is called, the resident memory
// outside the Go runtime: VmRSS less what the runtime holds mapped and not released to the
// operating system. That is the client's C heap, the C allocator's arenas, the binary and
// the threads' stacks. Memory the runtime mapped but never touched is not resident, so the
// figure is a lower bound. stop returns the largest sample, 0 where /proc is missing.
func sampleOutsideGo() (stop func() uint64) {
	done, finished := make(chan struct{}), make(chan struct{})
	var peak uint64
	go func() {
		defer close(finished)
		t := time.NewTicker(outsideGoEvery)
		defer t.Stop()
		for {
			peak = max(peak, outsideGo())
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

// outsideGo is the resident memory outside the Go runtime now (see sampleOutsideGo).
func outsideGo() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	goHeld := s[0].Value.Uint64() - s[1].Value.Uint64()
	rss := rssNow()
	if rss <= goHeld {
		return 0
	}
	return rss - goHeld
}
