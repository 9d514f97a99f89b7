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

// Stages splits the pipeline's time. The per-event figures divide each total by the messages
// decided. Decoding runs on several workers at once, so its total is CPU time, not wall time.
type Stages struct {
	// CPU is the consuming process's CPU time (user and system, every thread: the client's,
	// the polling goroutine, the workers, the garbage collector) during the pipeline phase.
	CPUNsPerEvent float64 `json:"cpu_ns_per_event"`
	// GC is the garbage collector's share of CPU (runtime/metrics).
	GCNsPerEvent float64 `json:"gc_ns_per_event"`
	// Decode is the handler: scan, validate, build the event; summed over the workers.
	DecodeNsPerEvent float64 `json:"decode_ns_per_event"`
	// Tick is the ticks' total (barrier, close, serialization, commits) spread over the events.
	TickNsPerEvent float64 `json:"tick_ns_per_event"`
	// SinkWait is the time a tick waited for the previous tick's writes while consuming
	// (consumer.TickInfo.Waited): where it is large, the sink holds the pipeline back.
	SinkWaitNsPerEvent float64 `json:"sink_wait_ns_per_event"`

	CPUSeconds        float64 `json:"cpu_seconds"`
	GCSeconds         float64 `json:"gc_seconds"`
	DecodeSeconds     float64 `json:"decode_seconds"`
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

// Storage is what the pipeline's writes cost Postgres: the rows the window tables took per
// merged row stored, and the WAL the server wrote during the pipeline phase.
type Storage struct {
	// StoredRows is the merged rows in the aggregates table at the end.
	StoredRows int64 `json:"stored_rows"`
	// RowWrites is n_tup_ins + n_tup_upd of the window tables (merged rows, compact partials,
	// folded windows) from pg_stat_user_tables; RowWritesPerRow divides it by StoredRows.
	RowWrites       int64   `json:"row_writes"`
	RowWritesPerRow float64 `json:"row_writes_per_row"`
	// WALBytes is pg_current_wal_lsn's advance over the pipeline phase, state tables and
	// progress included (and any other writer of the server); WALBytesPerRow divides it by
	// StoredRows.
	WALBytes       int64   `json:"wal_bytes"`
	WALBytesPerRow float64 `json:"wal_bytes_per_row"`
	// Checkpoints is how far the server's checkpoint counters (timed and requested, of
	// pg_stat_bgwriter, or pg_stat_checkpointer from PostgreSQL 17) advanced during the
	// pipeline phase. After a checkpoint starts, the first change to each page writes the
	// whole page to the WAL (full_page_writes), so a phase with one writes more WAL and keeps
	// Postgres busier than one without: runs to compare should have the same count.
	Checkpoints int64 `json:"checkpoints"`
	// Bytes of each table (pg_total_relation_size) at the end.
	MergedBytes   int64 `json:"merged_bytes"`
	PartialsBytes int64 `json:"partials_bytes"`
	FoldedBytes   int64 `json:"folded_bytes"`
	StateBytes    int64 `json:"state_bytes"`
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
	// Procs is the GOMAXPROCS the consuming phases ran with.
	Procs int `json:"gomaxprocs"`
	// BufferLimit is the pipeline's bound (consumer.Config.BufferLimit); zero: the default.
	BufferLimit int64 `json:"buffer_limit"`
	// GOGC and MemoryLimit are the garbage collector's settings in the consuming process.
	GOGC        int   `json:"gogc"`
	MemoryLimit int64 `json:"memory_limit"`
	// InChild: the raw consumer and the pipeline ran in a child process, apart from the
	// broker and the producer.
	InChild bool `json:"in_child"`

	Records      int64 `json:"records"`
	Positions    int64 `json:"positions"`
	Predictions  int64 `json:"predictions"`
	PeakVehicles int   `json:"peak_vehicles"`

	ProduceSeconds float64 `json:"produce_seconds"`
	Raw            Rate    `json:"raw"`
	// RawCPUNsPerEvent is the consuming process's CPU time per event while it consumed raw.
	RawCPUNsPerEvent float64 `json:"raw_cpu_ns_per_event"`
	Pipeline         Rate    `json:"pipeline"`
	// Ratio is the pipeline's rate over the raw consumer's.
	Ratio float64 `json:"ratio"`

	Admitted     int64 `json:"admitted"`
	Late         int64 `json:"late"`
	DeadLettered int64 `json:"dead_lettered"`

	Stages Stages `json:"stages"`
	// SinkWaitShare is the sink wait's share of the pipeline's wall time.
	SinkWaitShare float64 `json:"sink_wait_share"`
	Storage       Storage `json:"storage"`
	TickP50Ms     float64 `json:"tick_p50_ms"`
	TickP99Ms     float64 `json:"tick_p99_ms"`
	TickMaxMs     float64 `json:"tick_max_ms"`

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
	// PeakOutsideGo is the largest resident memory outside the Go runtime sampled during the
	// pipeline phase (librdkafka's buffers, the C allocator, the binary); a lower bound.
	PeakOutsideGo uint64 `json:"peak_outside_go_bytes"`
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

// DrainShare is the drain's share of the pipeline's wall time: from the last message decided to
// the last commit, the writes a bounded run ends with (the one in flight, then the end of
// input's closes). The sink wait counts only waits while messages are still being decided.
func (c Result) DrainShare() float64 {
	if c.Pipeline.Seconds <= 0 {
		return 0
	}
	return c.Stages.DrainSeconds / c.Pipeline.Seconds
}

// WriteTables prints the end-to-end table, the storage table and the scaling/memory table.
func (r Report) WriteTables(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "End to end (events/s from first consume to last commit; ns per event; sink wait and drain as shares of the pipeline's time)")
	fmt.Fprintln(tw, "case\tprocs\tparts\trecords\traw ev/s\tpipeline ev/s\tratio\traw cpu\tcpu\tgc\tdecode\ttick\tsink wait\tdrain\ttick p50 ms\ttick p99 ms\tpeak depth\trows/s\t")
	for _, c := range r.Cases {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.0f\t%.0f\t%.2f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.1f%%\t%.1f%%\t%.1f\t%.1f\t%d\t%.0f\t\n",
			c.Name, c.Procs, c.Partitions, c.Records, c.Raw.EventsPerSec, c.Pipeline.EventsPerSec, c.Ratio,
			c.RawCPUNsPerEvent, c.Stages.CPUNsPerEvent, c.Stages.GCNsPerEvent, c.Stages.DecodeNsPerEvent, c.Stages.TickNsPerEvent,
			100*c.SinkWaitShare, 100*c.DrainShare(), c.TickP50Ms, c.TickP99Ms, c.PeakPending, c.RowsPerSec)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Storage (row writes of the window tables per merged row stored; WAL and checkpoints of the pipeline phase, state tables included)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\tstored rows\trow writes\twrites/row\tWAL MB\tWAL B/row\tcheckpoints\tmerged MB\tpartials MB\tfolded MB\tstate MB\t")
	for _, c := range r.Cases {
		st := c.Storage
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.2f\t%.1f\t%.0f\t%d\t%.1f\t%.2f\t%.1f\t%.1f\t\n", c.Name, st.StoredRows, st.RowWrites,
			st.RowWritesPerRow, mb(uint64(st.WALBytes)), st.WALBytesPerRow, st.Checkpoints, mb(uint64(st.MergedBytes)),
			mb(uint64(st.PartialsBytes)), mb(uint64(st.FoldedBytes)), mb(uint64(st.StateBytes)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Scaling and memory (open keys: (window, key) aggregates at the peak; x seed: over 6,994)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\tparts\tfeed scale\tpeak open keys\tx seed\tB/open key\theap growth MB\tbuffer limit MB\tpeak RSS MB\tRSS growth MB\toutside Go MB\tpipeline ev/s\tratio\t")
	for _, c := range r.Cases {
		limit := "default"
		if c.BufferLimit != 0 {
			limit = fmt.Sprintf("%.0f", mb(uint64(max(c.BufferLimit, 0))))
		}
		fmt.Fprintf(tw, "%s\t%d\t%g\t%d\t%.1f\t%.0f\t%.1f\t%s\t%.0f\t%.0f\t%.0f\t%.0f\t%.2f\t\n",
			c.Name, c.Partitions, c.Scale, c.PeakOpenKeys, c.SizeMeasured, c.BytesPerOpenKey,
			mb(c.HeapPeakGrowth), limit, mb(c.PeakRSS), mb(c.RSSGrowth), mb(c.PeakOutsideGo), c.Pipeline.EventsPerSec, c.Ratio)
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
	fmt.Fprintln(tw, "case\truns\traw ev/s\tpipeline ev/s\tmin\tmax\tratio\tsink wait\twrites/row\tWAL B/row\tB/open key\t")
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
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.0f\t%.0f\t%.2f\t%.1f%%\t%.2f\t%.0f\t%.0f\t\n", base, len(rs),
			median(pick(func(c Result) float64 { return c.Raw.EventsPerSec })), median(pipe), pipe[0], pipe[len(pipe)-1],
			median(pick(func(c Result) float64 { return c.Ratio })),
			100*median(pick(func(c Result) float64 { return c.SinkWaitShare })),
			median(pick(func(c Result) float64 { return c.Storage.RowWritesPerRow })),
			median(pick(func(c Result) float64 { return c.Storage.WALBytesPerRow })),
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
