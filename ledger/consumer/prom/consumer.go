package prom

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/ledger/consumer"
)

// consumerMetrics are the metrics of the consumer's hooks.
type consumerMetrics struct {
	consumed, admitted, late, decodeErrors *prometheus.CounterVec
	topics                                 byTopic[*topicCounters]

	deadLetters, lost                   *prometheus.CounterVec
	commits, commitFailures             prometheus.Counter
	writes, writeFailures, rows         *prometheus.CounterVec
	uncommitted, openWindows, watermark prometheus.Gauge
	assigned, unassigned, sinceAssign   prometheus.Gauge
	lag, partWatermark, closedThrough   *prometheus.GaugeVec
	windowBytes, backlogBytes           prometheus.Gauge
	writeDuration                       *prometheus.HistogramVec
	tickDuration                        prometheus.Histogram
}

// topicCounters are one topic's per-message counters, resolved once.
type topicCounters struct {
	consumed, admitted, late, decodeErrors prometheus.Counter
}

func (m *consumerMetrics) init(cs []prometheus.Collector) []prometheus.Collector {
	m.consumed = counterVec(&cs, "processor_consumed_total", "Messages decided, by topic: admitted + late + dead-lettered.", "topic")
	m.admitted = counterVec(&cs, "processor_admitted_total", "Messages applied, by topic.", "topic")
	m.late = counterVec(&cs, "processor_late_events_total", "Events whose window had already closed in their partition, by topic.", "topic")
	m.decodeErrors = counterVec(&cs, "processor_decode_errors_total", "Messages that failed to decode or validate and were dead-lettered, by topic.", "topic")
	m.deadLetters = counterVec(&cs, "processor_dead_letters_total", "Dead-letter delivery reports, by source topic and result (delivered, failed).", "topic", "result")
	m.lost = counterVec(&cs, "processor_lost_offsets_total",
		"Offsets whose records were deleted (retention, DeleteRecords) before the consumer read them, by topic and partition.",
		"topic", "partition")
	m.commits = counter(&cs, "processor_commits_total", "Offset commits accepted by the broker.")
	m.commitFailures = counter(&cs, "processor_commit_failures_total", "Offset commits that failed (retried at the next tick).")
	m.writes = counterVec(&cs, "processor_sink_writes_total", "Sink writes that committed, by kind (state, close).", "kind")
	m.writeFailures = counterVec(&cs, "processor_sink_write_failures_total", "Sink writes that failed, by kind.", "kind")
	m.rows = counterVec(&cs, "processor_sink_rows_total", "Rows written: state rows and partials, by kind.", "kind")
	m.uncommitted = gauge(&cs, "processor_uncommitted_messages", "Messages consumed and not yet committable (the offset ledgers' depth).")
	m.openWindows = gauge(&cs, "processor_open_windows", "Open (window, key) aggregates over all partitions.")
	m.watermark = gauge(&cs, "processor_watermark_seconds", "Minimum partition watermark over active partitions, Unix seconds.")
	m.assigned = gauge(&cs, "processor_assigned_partitions", "Partitions assigned to this consumer.")
	m.unassigned = gauge(&cs, "processor_unassigned_seconds", "How long the consumer has held no partition; 0 while it holds some.")
	m.sinceAssign = gauge(&cs, "processor_since_assignment_seconds", "Time since the consumer's assignment last changed.")
	buffered := gaugeVec(&cs, "processor_buffered_bytes",
		"Estimated memory the buffer bound (BufferLimit) holds, by kind: windows (open windows), backlog (state rows, partials and dead letters waiting for a write).", "kind")
	m.windowBytes, m.backlogBytes = buffered.WithLabelValues("windows"), buffered.WithLabelValues("backlog")
	m.lag = gaugeVec(&cs, "processor_consumer_lag", "High watermark minus position, per partition.", "topic", "partition")
	m.partWatermark = gaugeVec(&cs, "processor_partition_watermark_seconds", "Partition watermark (max event time - lateness), Unix seconds.", "topic", "partition")
	m.closedThrough = gaugeVec(&cs, "processor_partition_closed_through_seconds", "Partition progress written to the sink, Unix seconds.", "topic", "partition")
	m.writeDuration = histogramVec(&cs, "processor_sink_write_duration_seconds", "Duration of the consumer's sink writes, by kind.", "kind")
	m.tickDuration = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "processor_tick_duration_seconds",
		Help: "Duration of the periodic flush, close and commit.", Buckets: durationBuckets})
	cs = append(cs, m.tickDuration)
	m.topics.newV = func(topic string) *topicCounters {
		return &topicCounters{
			consumed: m.consumed.WithLabelValues(topic), admitted: m.admitted.WithLabelValues(topic),
			late: m.late.WithLabelValues(topic), decodeErrors: m.decodeErrors.WithLabelValues(topic),
		}
	}
	return cs
}

// OnMessage implements consumer.HookMessage. It is called from the consumer's workers,
// concurrently.
func (m *consumerMetrics) OnMessage(i consumer.MessageInfo) {
	c := m.topics.get(i.Topic)
	c.consumed.Inc()
	switch i.Decision {
	case consumer.Admitted:
		c.admitted.Inc()
	case consumer.Late:
		c.late.Inc()
	case consumer.DeadLettered:
		c.decodeErrors.Inc()
	}
}

// OnDeadLetter implements consumer.HookDeadLetter.
func (m *consumerMetrics) OnDeadLetter(i consumer.DeadLetterInfo) {
	m.deadLetters.WithLabelValues(i.Topic, deliveryResult(i.Err)).Inc()
}

// OnLost implements consumer.HookLost. The series of a partition stays after it is revoked:
// a loss is counted once, by the consumer that found it.
func (m *consumerMetrics) OnLost(i consumer.LostInfo) {
	m.lost.WithLabelValues(i.Topic, partition(i.TopicPartition)).Add(float64(i.To - i.From))
}

// OnWrite implements consumer.HookWrite.
func (m *consumerMetrics) OnWrite(i consumer.WriteInfo) {
	kind := i.Kind.String()
	m.writeDuration.WithLabelValues(kind).Observe(i.Duration.Seconds())
	if i.Err != nil {
		m.writeFailures.WithLabelValues(kind).Inc()
		return
	}
	m.writes.WithLabelValues(kind).Inc()
	m.rows.WithLabelValues(kind).Add(float64(i.Rows))
}

// OnCommit implements consumer.HookCommit.
func (m *consumerMetrics) OnCommit(i consumer.CommitInfo) {
	if i.Err != nil || len(i.Failed) > 0 {
		m.commitFailures.Inc()
	}
	if i.Err == nil {
		m.commits.Inc()
	}
}

// OnAssign implements consumer.HookAssign.
func (m *consumerMetrics) OnAssign(consumer.AssignInfo) { m.assigned.Inc() }

// OnRevoke implements consumer.HookRevoke: the partition's series are deleted.
func (m *consumerMetrics) OnRevoke(i consumer.RevokeInfo) {
	m.assigned.Dec()
	labels := prometheus.Labels{"topic": i.Topic, "partition": partition(i.TopicPartition)}
	m.lag.Delete(labels)
	m.partWatermark.Delete(labels)
	m.closedThrough.Delete(labels)
}

// OnPartition implements consumer.HookPartition.
func (m *consumerMetrics) OnPartition(i consumer.PartitionInfo) {
	p := partition(i.TopicPartition)
	if i.Lag >= 0 {
		m.lag.WithLabelValues(i.Topic, p).Set(float64(i.Lag))
	}
	if !i.Watermark.IsZero() {
		m.partWatermark.WithLabelValues(i.Topic, p).Set(unix(i.Watermark))
	}
	if !i.ClosedThrough.IsZero() {
		m.closedThrough.WithLabelValues(i.Topic, p).Set(unix(i.ClosedThrough))
	}
}

// OnTick implements consumer.HookTick.
func (m *consumerMetrics) OnTick(i consumer.TickInfo) {
	m.uncommitted.Set(float64(i.Pending))
	m.openWindows.Set(float64(i.OpenKeys))
	if !i.MinWatermark.IsZero() {
		m.watermark.Set(unix(i.MinWatermark))
	}
	m.unassigned.Set(i.Unassigned.Seconds())
	m.sinceAssign.Set(i.SinceAssignment.Seconds())
	m.windowBytes.Set(float64(i.WindowBytes))
	m.backlogBytes.Set(float64(i.BacklogBytes))
	m.tickDuration.Observe(i.Duration.Seconds())
}

func partition(tp ledger.TopicPartition) string { return strconv.Itoa(int(tp.Partition)) }

func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// deliveryResult is the result label of a delivery report.
func deliveryResult(err error) string {
	if err != nil {
		return "failed"
	}
	return "delivered"
}
