package prom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/streamledger/streamledger/sink"
)

// sinkMetrics are the metrics of the sink's hooks: what only the sink knows of a write (its
// retries and the rows it stored). The write itself, its result and its duration are the
// consumer's (processor_sink_writes_total and the rest). The children of fixed label values
// are resolved once.
type sinkMetrics struct {
	closeRetries, latestRetries prometheus.Counter
	merged, compact, folded     prometheus.Counter
	progress, state, ignored    prometheus.Counter
}

func (m *sinkMetrics) init(cs []prometheus.Collector) []prometheus.Collector {
	retries := counterVec(&cs, "processor_sink_retries_total", "Sink transactions retried after a transient failure, by operation.", "op")
	rows := counterVec(&cs, "processor_sink_stored_rows_total",
		"Rows the sink committed, by kind: merged, compact (partials of incomplete windows), folded, progress, state.", "kind")
	ignored := counter(&cs, "processor_sink_ignored_partials_total",
		"Partials the sink dropped: replays of partitions already merged into their window, and partials of final windows.")
	m.closeRetries, m.latestRetries = retries.WithLabelValues("write_close"), retries.WithLabelValues("upsert_latest")
	m.merged, m.compact, m.folded = rows.WithLabelValues("merged"), rows.WithLabelValues("compact"), rows.WithLabelValues("folded")
	m.progress, m.state, m.ignored = rows.WithLabelValues("progress"), rows.WithLabelValues("state"), ignored
	return cs
}

// retried counts the attempts of a call after its first.
func retried(c prometheus.Counter, attempts int) {
	if attempts > 1 {
		c.Add(float64(attempts - 1))
	}
}

// OnWriteClose implements sink.HookWriteClose. The row counts are zero when the call failed.
func (m *sinkMetrics) OnWriteClose(i sink.WriteCloseInfo) {
	retried(m.closeRetries, i.Attempts)
	m.merged.Add(float64(i.Merged))
	m.compact.Add(float64(i.Compact))
	m.folded.Add(float64(i.Folded))
	m.progress.Add(float64(i.Progress))
	m.ignored.Add(float64(i.Ignored))
}

// OnUpsertLatest implements sink.HookUpsertLatest. Rows is zero when the call failed.
func (m *sinkMetrics) OnUpsertLatest(i sink.UpsertLatestInfo) {
	retried(m.latestRetries, i.Attempts)
	m.state.Add(float64(i.Rows))
}
