package bench

import (
	"bufio"
	"os"
	"strconv"
	"strings"
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
