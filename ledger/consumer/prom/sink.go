package prom

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/streamledger/streamledger/sink"
)

// sinkMetrics are the metrics of the sink's hooks. The children of fixed label values are
// resolved once.
type sinkMetrics struct {
	closeCalls, latestCalls  callMetrics
	merged, compact, folded  prometheus.Counter
	progress, state, ignored prometheus.Counter
}

// callMetrics are the metrics of one kind of sink call.
type callMetrics struct {
	ok, failed, retries prometheus.Counter
	duration            prometheus.Observer
}

func (m *sinkMetrics) init(cs []prometheus.Collector) []prometheus.Collector {
	calls := counterVec(&cs, "processor_sink_calls_total", "Calls of the sink, by operation and result (ok, error).", "op", "result")
	duration := histogramVec(&cs, "processor_sink_call_duration_seconds", "Duration of a sink call, retries included, by operation.", "op")
	retries := counterVec(&cs, "processor_sink_retries_total", "Sink transactions retried after a transient failure, by operation.", "op")
	rows := counterVec(&cs, "processor_sink_stored_rows_total",
		"Rows the sink committed, by kind: merged, compact (partials of incomplete windows), folded, progress, state.", "kind")
	ignored := counter(&cs, "processor_sink_ignored_partials_total",
		"Partials the sink dropped: replays of partitions already merged into their window, and partials of final windows.")
	for op, c := range map[string]*callMetrics{"write_close": &m.closeCalls, "upsert_latest": &m.latestCalls} {
		*c = callMetrics{ok: calls.WithLabelValues(op, "ok"), failed: calls.WithLabelValues(op, "error"),
			retries: retries.WithLabelValues(op), duration: duration.WithLabelValues(op)}
	}
	m.merged, m.compact, m.folded = rows.WithLabelValues("merged"), rows.WithLabelValues("compact"), rows.WithLabelValues("folded")
	m.progress, m.state, m.ignored = rows.WithLabelValues("progress"), rows.WithLabelValues("state"), ignored
	return cs
}

func (c *callMetrics) observe(attempts int, d time.Duration, err error) {
	c.duration.Observe(d.Seconds())
	if attempts > 1 {
		c.retries.Add(float64(attempts - 1))
	}
	if err != nil {
		c.failed.Inc()
		return
	}
	c.ok.Inc()
}

// OnWriteClose implements sink.HookWriteClose.
func (m *sinkMetrics) OnWriteClose(i sink.WriteCloseInfo) {
	m.closeCalls.observe(i.Attempts, i.Duration, i.Err)
	if i.Err != nil {
		return
	}
	m.merged.Add(float64(i.Merged))
	m.compact.Add(float64(i.Compact))
	m.folded.Add(float64(i.Folded))
	m.progress.Add(float64(i.Progress))
	m.ignored.Add(float64(i.Ignored))
}

// OnUpsertLatest implements sink.HookUpsertLatest.
func (m *sinkMetrics) OnUpsertLatest(i sink.UpsertLatestInfo) {
	m.latestCalls.observe(i.Attempts, i.Duration, i.Err)
	if i.Err == nil {
		m.state.Add(float64(i.Rows))
	}
}
