package window

import (
	"math"
	"math/bits"
	"time"
)

// DefaultSize is the window size used when [Config.Size] is zero.
const DefaultSize = 5 * time.Minute

// Bounds returns the window [start, end) of the given size that contains t, aligned to
// the Unix epoch, in UTC: start is the latest instant at or before t that is a whole
// multiple of size after (or before) 1970-01-01T00:00:00Z. It is exact for every
// time.Time, including times before 1970. A size <= 0 means [DefaultSize], as in [Config].
func Bounds(t time.Time, size time.Duration) (start, end time.Time) {
	if size <= 0 {
		size = DefaultSize
	}
	start = t.Add(-sinceBoundary(t.Unix(), int64(t.Nanosecond()), int64(size))).UTC()
	return start, start.Add(size)
}

// sinceBoundary returns (sec·1e9 + nsec) mod size in [0, size), computed without
// overflow for any sec.
func sinceBoundary(sec, nsec, size int64) time.Duration {
	s := uint64(sec % size)
	if sec%size < 0 {
		s = uint64(sec%size + size)
	}
	hi, lo := bits.Mul64(s, 1e9)
	r := bits.Rem64(hi, lo, uint64(size))
	return time.Duration((r + uint64(nsec)) % uint64(size))
}

// Event times inside the Windows are int64 nanoseconds since the epoch.
const (
	minSec = -9223372035 // sec·1e9 + nsec stays above math.MinInt64
	maxSec = 9223372035  // and below math.MaxInt64
)

// unixNano converts t, reporting false outside the int64 nanosecond range.
func unixNano(t time.Time) (int64, bool) {
	sec := t.Unix()
	if sec < minSec || sec > maxSec {
		return 0, false
	}
	return sec*1e9 + int64(t.Nanosecond()), true
}

// saturatingNano is unixNano clamped to the int64 range.
func saturatingNano(t time.Time) int64 {
	if ns, ok := unixNano(t); ok {
		return ns
	}
	if t.Unix() < 0 {
		return math.MinInt64
	}
	return math.MaxInt64
}

func fromNano(ns int64) time.Time { return time.Unix(0, ns).UTC() }

// floorStart returns the start of the window of the given size containing ns.
func floorStart(ns, size int64) int64 {
	r := ns % size
	if r < 0 {
		r += size
	}
	return ns - r
}
