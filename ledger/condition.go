package ledger

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Condition is what makes one ledger entry durable. The zero Condition is durable as soon as it
// is added (a message that was counted as late, or filtered out, needs nothing more).
//
// Conditions combine with [Condition.And]; an entry is durable when every part holds:
//
//	ledger.Window(end)        closed_through >= end (the window was closed and written)
//	ledger.Flush(seq)         state flushed through seq
//	ledger.Ack()              Ack(offset) was called for this entry
//
// Conditions are small values and comparable with ==; consecutive entries with equal
// conditions share one run of the ledger.
type Condition struct {
	end   int64  // window end in Unix nanoseconds, meaningful when win is set
	flush uint64 // flush sequence, 0 = none
	win   bool
	ack   bool
}

// Window returns a Condition that holds once closed_through reaches end.
//
// Times are compared at nanosecond precision; times outside the years 1678-2262 saturate at
// the ends of that range (decoders are expected to reject such event times long before).
func Window(end time.Time) Condition {
	return Condition{end: unixNano(end), win: true}
}

// Flush returns a Condition that holds once the state flush with sequence seq (or a later one)
// has committed. Sequence 0 means "no flush needed" and yields the zero Condition.
func Flush(seq uint64) Condition {
	return Condition{flush: seq}
}

// Ack returns a Condition that holds once [Partition.Ack] is called for the entry: a dead
// letter's positive delivery report, or a service's own asynchronous work.
func Ack() Condition {
	return Condition{ack: true}
}

// And returns the Condition that holds when both c and d hold. A combined window condition
// keeps the later end, a combined flush the higher sequence.
func (c Condition) And(d Condition) Condition {
	r := Condition{flush: max(c.flush, d.flush), win: c.win || d.win, ack: c.ack || d.ack}
	switch {
	case c.win && d.win:
		r.end = max(c.end, d.end)
	case c.win:
		r.end = c.end
	case d.win:
		r.end = d.end
	}
	return r
}

// HasWindow reports whether c waits for a window and returns its end.
func (c Condition) HasWindow() (end time.Time, ok bool) {
	if !c.win {
		return time.Time{}, false
	}
	return time.Unix(0, c.end).UTC(), true
}

// String describes c for logs and test failures, e.g. "window<=2024-05-01T12:05:00Z+flush#3".
func (c Condition) String() string {
	var parts []string
	if c.win {
		parts = append(parts, "window<="+time.Unix(0, c.end).UTC().Format(time.RFC3339Nano))
	}
	if c.flush != 0 {
		parts = append(parts, fmt.Sprintf("flush#%d", c.flush))
	}
	if c.ack {
		parts = append(parts, "ack")
	}
	if len(parts) == 0 {
		return "immediate"
	}
	return strings.Join(parts, "+")
}

// unixNano is t.UnixNano with saturation instead of wrap-around, so that ordering is preserved
// for every instant (time.Time.UnixNano is undefined outside the years 1678-2262).
func unixNano(t time.Time) int64 {
	const limit = math.MaxInt64/int64(time.Second) - 1
	switch sec := t.Unix(); {
	case sec > limit:
		return math.MaxInt64
	case sec < -limit:
		return math.MinInt64
	}
	return t.UnixNano()
}
