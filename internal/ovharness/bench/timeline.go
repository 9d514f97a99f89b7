package bench

import (
	"encoding/json"
	"io"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/streamledger/streamledger/ledger/consumer"
)

// timelineLine is one line of a pipeline phase's timeline (--timeline): a tick or a write,
// with the time since the phase started and the collector's CPU since the previous line, so
// that a wait for a write can be told apart from a collector working near the memory limit.
type timelineLine struct {
	At    float64 `json:"at_s"`
	Event string  `json:"event"` // "tick" or "write"

	// A tick's.
	DurationMs   float64 `json:"duration_ms"`
	WaitedMs     float64 `json:"waited_ms,omitempty"`
	WindowBytes  int64   `json:"window_bytes,omitempty"`
	BacklogBytes int64   `json:"backlog_bytes,omitempty"`
	OpenKeys     int     `json:"open_keys,omitempty"`
	GCCPU        float64 `json:"gc_cpu_s"`
	LiveHeap     uint64  `json:"live_heap_bytes"`
	GCCycles     uint64  `json:"gc_cycles"`

	// A write's.
	Kind   string `json:"kind,omitempty"`
	Source string `json:"source,omitempty"`
	Table  string `json:"table,omitempty"`
	Rows   int    `json:"rows,omitempty"`
	Err    string `json:"error,omitempty"`
}

// timeline writes a line per tick and per write to w as JSON, one object a line. It is safe
// for concurrent use. Write errors are dropped: the timeline is a diagnostic beside the run.
type timeline struct {
	mu      sync.Mutex
	enc     *json.Encoder
	start   time.Time
	now     func() time.Time
	samples []metrics.Sample
	gcCPU   float64 // the collector's CPU at the previous line
}

func newTimeline(w io.Writer, now func() time.Time) *timeline {
	t := &timeline{enc: json.NewEncoder(w), start: now(), now: now, samples: []metrics.Sample{
		{Name: "/cpu/classes/gc/total:cpu-seconds"},
		{Name: "/gc/heap/live:bytes"},
		{Name: "/gc/cycles/total:gc-cycles"},
	}}
	metrics.Read(t.samples)
	t.gcCPU = t.samples[0].Value.Float64()
	return t
}

// OnTick implements consumer.HookTick.
func (t *timeline) OnTick(i consumer.TickInfo) {
	t.write(timelineLine{Event: "tick", DurationMs: ms(i.Duration), WaitedMs: ms(i.Waited),
		WindowBytes: i.WindowBytes, BacklogBytes: i.BacklogBytes, OpenKeys: i.OpenKeys})
}

// OnWrite implements consumer.HookWrite.
func (t *timeline) OnWrite(i consumer.WriteInfo) {
	l := timelineLine{Event: "write", Kind: i.Kind.String(), Table: i.Table, Rows: i.Rows, DurationMs: ms(i.Duration)}
	if i.Source.Topic != "" {
		l.Source = i.Source.String()
	}
	if i.Err != nil {
		l.Err = i.Err.Error()
	}
	t.write(l)
}

func (t *timeline) write(l timelineLine) {
	t.mu.Lock()
	defer t.mu.Unlock()
	metrics.Read(t.samples)
	gc := t.samples[0].Value.Float64()
	l.At = t.now().Sub(t.start).Seconds()
	l.GCCPU, t.gcCPU = gc-t.gcCPU, gc
	l.LiveHeap, l.GCCycles = t.samples[1].Value.Uint64(), t.samples[2].Value.Uint64()
	_ = t.enc.Encode(l)
}
