package procmem

import (
	"bufio"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
)

// Peak is the process's peak resident set (VmHWM), in bytes.
func Peak() uint64 { return status("VmHWM:") }

// RSS is the process's resident set (VmRSS), in bytes.
func RSS() uint64 { return status("VmRSS:") }

// ResetPeak resets VmHWM to the current resident set (Linux: "5" to /proc/self/clear_refs),
// so that the peak of a phase is its own. It reports whether that was allowed.
func ResetPeak() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// OutsideGo is the resident memory outside the Go runtime now: VmRSS less what the runtime
// holds mapped and not released to the operating system. Memory the runtime mapped but never
// touched is not resident, so the figure is a lower bound.
func OutsideGo() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	goHeld := s[0].Value.Uint64() - s[1].Value.Uint64()
	rss := RSS()
	if rss <= goHeld {
		return 0
	}
	return rss - goHeld
}

// status reads one "Field: N kB" line of /proc/self/status, in bytes; 0 where it is missing.
func status(field string) uint64 {
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
