package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Rate is a count over a span of wall time.
type Rate struct {
	Events       int64   `json:"events"`
	Seconds      float64 `json:"seconds"`
	EventsPerSec float64 `json:"events_per_sec"`
}

// Stages splits the pipeline's time. The per-event figures divide each stage's total by the
// messages decided.
type Stages struct {
	// Client is the time between two messages (the client's Poll and the loop), ticks and
	// the waits for the sink excluded.
	ClientNsPerEvent float64 `json:"client_ns_per_event"`
	// Decode is the handler: scan, validate, build the event.
	DecodeNsPerEvent float64 `json:"decode_ns_per_event"`
	// Apply is the runtime's work on a decoded event: late test, windows, state buffer, ledger,
	// watermark, hooks.
	ApplyNsPerEvent float64 `json:"apply_ns_per_event"`
	// Tick is the ticks' total (state flushes, close batches, commits) spread over the events.
	TickNsPerEvent float64 `json:"tick_ns_per_event"`
	// SinkWait is the time the loop waited for the previous tick's writes while consuming
	// (consumer.TickInfo.Waited): where it is large, the sink holds the pipeline back.
	SinkWaitNsPerEvent float64 `json:"sink_wait_ns_per_event"`

	ClientSeconds     float64 `json:"client_seconds"`
	DecodeSeconds     float64 `json:"decode_seconds"`
	ApplySeconds      float64 `json:"apply_seconds"`
	TickSeconds       float64 `json:"tick_seconds"`
	SinkWaitSeconds   float64 `json:"sink_wait_seconds"`
	StateWriteSeconds float64 `json:"state_write_seconds"`
	CloseWriteSeconds float64 `json:"close_write_seconds"`
	CommitSeconds     float64 `json:"commit_seconds"`
	// Drain is from the last message decided to the commit through every partition's end.
	DrainSeconds float64 `json:"drain_seconds"`
	// GCProbe is the forced GCs that measure the live heap; excluded from the rates.
	GCProbeSeconds     float64 `json:"gc_probe_seconds"`
	TickWhileConsuming float64 `json:"tick_while_consuming_seconds"`
	StateWrites        int64   `json:"state_writes"`
	CloseWrites        int64   `json:"close_writes"`
	Ticks              int     `json:"ticks"`
}

// Result is one case's figures.
type Result struct {
	Name          string    `json:"name"`
	Size          float64   `json:"size_target"`
	SizeMeasured  float64   `json:"size_measured"`
	Scale         float64   `json:"feed_scale"`
	Partitions    int       `json:"partitions"`
	FeedStart     time.Time `json:"feed_start"`
	FeedDuration  string    `json:"feed_duration"`
	FlushInterval string    `json:"flush_interval"`
	// FormerHandlers: the case ran the OV handlers as they were before the profile.
	FormerHandlers bool `json:"former_handlers,omitempty"`
	// SyncWrites: the case ran the runtime's writes as they were before the profile.
	SyncWrites bool `json:"sync_writes,omitempty"`
	// InChild: the raw consumer and the pipeline ran in a child process, apart from the
	// broker and the producer.
	InChild bool `json:"in_child"`

	Records      int64 `json:"records"`
	Positions    int64 `json:"positions"`
	Predictions  int64 `json:"predictions"`
	PeakVehicles int   `json:"peak_vehicles"`

	ProduceSeconds float64 `json:"produce_seconds"`
	Raw            Rate    `json:"raw"`
	Pipeline       Rate    `json:"pipeline"`
	// Ratio is the pipeline's rate over the raw consumer's.
	Ratio float64 `json:"ratio"`

	Admitted     int64 `json:"admitted"`
	Late         int64 `json:"late"`
	DeadLettered int64 `json:"dead_lettered"`

	Stages    Stages  `json:"stages"`
	TickP50Ms float64 `json:"tick_p50_ms"`
	TickP99Ms float64 `json:"tick_p99_ms"`
	TickMaxMs float64 `json:"tick_max_ms"`

	PeakPending  int64 `json:"peak_ledger_depth"`
	PeakOpenKeys int   `json:"peak_open_keys"`

	RowsState    int64   `json:"rows_state"`
	RowsPartials int64   `json:"rows_partials"`
	RowsPerSec   float64 `json:"rows_per_sec"`

	// PeakRSS is the peak RSS of the process that consumed: the child (raw consumer, then
	// processor) with InChild, otherwise the whole process, broker included; RSSGrowth the
	// growth during the pipeline phase.
	PeakRSS   uint64 `json:"peak_rss_bytes"`
	RSSGrowth uint64 `json:"rss_growth_bytes"`
	// HeapBase is the live heap before the pipeline started (mostly the broker's copy of the
	// feed); HeapPeakGrowth the largest growth over it seen by a probe.
	HeapBase       uint64 `json:"heap_base_bytes"`
	HeapPeakGrowth uint64 `json:"heap_peak_growth_bytes"`
	// BytesPerOpenKey is the live heap's growth over HeapBase divided by the open keys, at the
	// probe with the most open keys (ProbeOpenKeys).
	BytesPerOpenKey float64 `json:"bytes_per_open_key"`
	ProbeOpenKeys   int     `json:"probe_open_keys"`
}

// Report is a whole run, as written to JSON.
type Report struct {
	Started    time.Time `json:"started"`
	Mode       string    `json:"mode"`
	GoVersion  string    `json:"go_version"`
	NumCPU     int       `json:"num_cpu"`
	GOMAXPROCS int       `json:"gomaxprocs"`
	Note       string    `json:"note"`
	Cases      []Result  `json:"cases"`
}

// NewReport starts a report.
func NewReport(mode string) Report {
	return Report{Started: time.Now().UTC(), Mode: mode, GoVersion: runtime.Version(), NumCPU: runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		Note: "broker (kfake), producer and processor share one process: RSS includes the broker's copy of the feed; " +
			"bytes per open key is live-heap growth over the pre-pipeline baseline (an upper bound)"}
}

// WriteJSON writes the report as indented JSON.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTables prints the end-to-end table and the scaling/memory table.
func (r Report) WriteTables(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "End to end (events/s from first consume to last commit; ns per event by stage)")
	fmt.Fprintln(tw, "case\tparts\trecords\traw ev/s\tpipeline ev/s\tratio\tclient\tdecode\tapply\ttick\tsink wait\ttick p50 ms\ttick p99 ms\tpeak depth\trows/s\t")
	for _, c := range r.Cases {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%.0f\t%.2f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.1f\t%.1f\t%d\t%.0f\t\n",
			c.Name, c.Partitions, c.Records, c.Raw.EventsPerSec, c.Pipeline.EventsPerSec, c.Ratio,
			c.Stages.ClientNsPerEvent, c.Stages.DecodeNsPerEvent, c.Stages.ApplyNsPerEvent, c.Stages.TickNsPerEvent, c.Stages.SinkWaitNsPerEvent,
			c.TickP50Ms, c.TickP99Ms, c.PeakPending, c.RowsPerSec)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Scaling and memory (open keys: (window, key) aggregates at the peak; x seed: over 6,994)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\tparts\tfeed scale\tpeak open keys\tx seed\tB/open key\theap growth MB\tpeak RSS MB\tRSS growth MB\tpipeline ev/s\tratio\t")
	for _, c := range r.Cases {
		fmt.Fprintf(tw, "%s\t%d\t%g\t%d\t%.1f\t%.0f\t%.1f\t%.0f\t%.0f\t%.0f\t%.2f\t\n",
			c.Name, c.Partitions, c.Scale, c.PeakOpenKeys, c.SizeMeasured, c.BytesPerOpenKey,
			mb(c.HeapPeakGrowth), mb(c.PeakRSS), mb(c.RSSGrowth), c.Pipeline.EventsPerSec, c.Ratio)
	}
	return tw.Flush()
}

func mb(b uint64) float64 { return float64(b) / (1 << 20) }

// WriteMedians prints, for each case run more than once (pass k > 1 is named CASE#k), the
// median of its passes and the range of its pipeline rate: on a shared machine one run's
// rate can move by more than a change under test.
func (r Report) WriteMedians(w io.Writer) error {
	var order []string
	runs := map[string][]Result{}
	for _, c := range r.Cases {
		base := c.Name
		if i := strings.LastIndexByte(base, '#'); i >= 0 {
			base = base[:i]
		}
		if _, ok := runs[base]; !ok {
			order = append(order, base)
		}
		runs[base] = append(runs[base], c)
	}
	fmt.Fprintln(w, "Medians over the passes (min-max of the pipeline's rate)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\truns\traw ev/s\tpipeline ev/s\tmin\tmax\tratio\tsink wait\tB/open key\t")
	for _, base := range order {
		rs := runs[base]
		if len(rs) < 2 {
			continue
		}
		pick := func(f func(Result) float64) []float64 {
			out := make([]float64, len(rs))
			for i, c := range rs {
				out[i] = f(c)
			}
			slices.Sort(out)
			return out
		}
		pipe := pick(func(c Result) float64 { return c.Pipeline.EventsPerSec })
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.0f\t%.0f\t%.2f\t%.0f\t%.0f\t\n", base, len(rs),
			median(pick(func(c Result) float64 { return c.Raw.EventsPerSec })), median(pipe), pipe[0], pipe[len(pipe)-1],
			median(pick(func(c Result) float64 { return c.Ratio })),
			median(pick(func(c Result) float64 { return c.Stages.SinkWaitNsPerEvent })),
			median(pick(func(c Result) float64 { return c.BytesPerOpenKey })))
	}
	return tw.Flush()
}

// median returns the middle of sorted values, the mean of the two middle ones for an even count.
func median(sorted []float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}
