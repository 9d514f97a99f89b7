package metrics

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/ledger/consumer"
)

// Metrics implements the consumer's hooks. Create it with [New] and pass it in
// consumer.Config.Hooks.
type Metrics struct {
	consumed, admitted, late, decodeErrors *prometheus.CounterVec
	deadLetters                            *prometheus.CounterVec
	commits, commitFailures                prometheus.Counter
	writes, writeFailures, rows            *prometheus.CounterVec
	uncommitted, openWindows, watermark    prometheus.Gauge
	assigned                               prometheus.Gauge
	lag, partWatermark, closedThrough      *prometheus.GaugeVec
	writeDuration                          *prometheus.HistogramVec
	tickDuration                           prometheus.Histogram

	mu   sync.Mutex
	snap Snapshot
	lags map[ledger.TopicPartition]int64
	offs map[ledger.TopicPartition]int64
}

// Snapshot is the figures the demo shows, as of the last tick.
type Snapshot struct {
	Consumed, Admitted, Late, DeadLettered int64
	// Lag is the sum of the partitions' lags (-1 while unknown); Pending the ledger's depth.
	Lag, Pending int64
	OpenKeys     int
	// Committed is the sum of the last committed offsets of the partitions.
	Committed int64
	Commits   int64
	// StateRows and Partials count the rows written to the sink.
	StateRows, Partials int64
	// DeadLettersDelivered counts dead letters the broker confirmed.
	DeadLettersDelivered int64
	// MinWatermark is the minimum watermark over active partitions.
	MinWatermark time.Time
	Partitions   int
}

// New registers the metrics with reg.
func New(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		consumed:       prometheus.NewCounterVec(prometheus.CounterOpts{Name: "processor_consumed_total", Help: "Messages decided, by topic: admitted + late + dead-lettered."}, []string{"topic"}),
		admitted:       prometheus.NewCounterVec(prometheus.CounterOpts{Name: "processor_admitted_total", Help: "Messages applied, by topic."}, []string{"topic"}),
		late:           prometheus.NewCounterVec(prometheus.CounterOpts{Name: "processor_late_events_total", Help: "Events whose window had already closed in their partition, by topic."}, []string{"topic"}),
		decodeErrors:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "processor_decode_errors_total", Help: "Messages that failed to decode or validate and were dead-lettered, by topic."}, []string{"topic"}),
		deadLetters:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "processor_dead_letters_total", Help: "Dead-letter delivery reports, by source topic and result (delivered, failed)."}, []string{"topic", "result"}),
		commits:        prometheus.NewCounter(prometheus.CounterOpts{Name: "processor_commits_total", Help: "Offset commits accepted by the broker."}),
		commitFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "processor_commit_failures_total", Help: "Offset commits that failed (retried at the next tick)."}),
		writes:         prometheus.NewCounterVec(prometheus.CounterOpts{Name: "processor_sink_writes_total", Help: "Sink writes that committed, by kind (state, close)."}, []string{"kind"}),
		writeFailures:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: "processor_sink_write_failures_total", Help: "Sink writes that failed, by kind."}, []string{"kind"}),
		rows:           prometheus.NewCounterVec(prometheus.CounterOpts{Name: "processor_sink_rows_total", Help: "Rows written: state rows and partials, by kind."}, []string{"kind"}),
		uncommitted:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "processor_uncommitted_messages", Help: "Messages consumed and not yet committable (the offset ledger's depth)."}),
		openWindows:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "processor_open_windows", Help: "Open (window, key) aggregates over all partitions."}),
		watermark:      prometheus.NewGauge(prometheus.GaugeOpts{Name: "processor_watermark_seconds", Help: "Minimum partition watermark over active partitions, Unix seconds."}),
		assigned:       prometheus.NewGauge(prometheus.GaugeOpts{Name: "processor_assigned_partitions", Help: "Partitions assigned to this processor."}),
		lag:            prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "processor_consumer_lag", Help: "High watermark minus position, per partition."}, []string{"topic", "partition"}),
		partWatermark:  prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "processor_partition_watermark_seconds", Help: "Partition watermark (max event time - lateness), Unix seconds."}, []string{"topic", "partition"}),
		closedThrough:  prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "processor_partition_closed_through_seconds", Help: "Partition progress written to the sink, Unix seconds."}, []string{"topic", "partition"}),
		writeDuration:  prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "processor_sink_write_duration_seconds", Help: "Duration of sink writes, by kind.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}, []string{"kind"}),
		tickDuration:   prometheus.NewHistogram(prometheus.HistogramOpts{Name: "processor_tick_duration_seconds", Help: "Duration of the periodic flush, close and commit.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}),
		lags:           map[ledger.TopicPartition]int64{},
		offs:           map[ledger.TopicPartition]int64{},
	}
	for _, c := range []prometheus.Collector{m.consumed, m.admitted, m.late, m.decodeErrors, m.deadLetters, m.commits, m.commitFailures,
		m.writes, m.writeFailures, m.rows, m.uncommitted, m.openWindows, m.watermark, m.assigned, m.lag, m.partWatermark,
		m.closedThrough, m.writeDuration, m.tickDuration} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Snapshot returns the figures as of the last tick. It is safe to call from any goroutine.
func (m *Metrics) Snapshot() Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.snap
}

// OnMessage implements consumer.HookMessage.
func (m *Metrics) OnMessage(i consumer.MessageInfo) {
	m.consumed.WithLabelValues(i.Topic).Inc()
	m.mu.Lock()
	m.snap.Consumed++
	switch i.Outcome {
	case consumer.Admitted:
		m.snap.Admitted++
	case consumer.Late:
		m.snap.Late++
	case consumer.DeadLettered:
		m.snap.DeadLettered++
	}
	m.mu.Unlock()
	switch i.Outcome {
	case consumer.Admitted:
		m.admitted.WithLabelValues(i.Topic).Inc()
	case consumer.Late:
		m.late.WithLabelValues(i.Topic).Inc()
	case consumer.DeadLettered:
		m.decodeErrors.WithLabelValues(i.Topic).Inc()
	}
}

// OnDeadLetter implements consumer.HookDeadLetter.
func (m *Metrics) OnDeadLetter(i consumer.DeadLetterInfo) {
	result := "delivered"
	if i.Err != nil {
		result = "failed"
	} else {
		m.mu.Lock()
		m.snap.DeadLettersDelivered++
		m.mu.Unlock()
	}
	m.deadLetters.WithLabelValues(i.Topic, result).Inc()
}

// OnWrite implements consumer.HookWrite.
func (m *Metrics) OnWrite(i consumer.WriteInfo) {
	kind := "state"
	if i.Kind == consumer.WriteClose {
		kind = "close"
	}
	m.writeDuration.WithLabelValues(kind).Observe(i.Duration.Seconds())
	if i.Err != nil {
		m.writeFailures.WithLabelValues(kind).Inc()
		return
	}
	m.writes.WithLabelValues(kind).Inc()
	m.rows.WithLabelValues(kind).Add(float64(i.Rows))
	m.mu.Lock()
	if i.Kind == consumer.WriteClose {
		m.snap.Partials += int64(i.Rows)
	} else {
		m.snap.StateRows += int64(i.Rows)
	}
	m.mu.Unlock()
	if i.Kind == consumer.WriteClose && !i.ClosedThrough.IsZero() {
		m.closedThrough.WithLabelValues(i.Source.Topic, partition(i.Source)).Set(unix(i.ClosedThrough))
	}
}

// OnCommit implements consumer.HookCommit.
func (m *Metrics) OnCommit(i consumer.CommitInfo) {
	if i.Err != nil || len(i.Failed) > 0 {
		m.commitFailures.Inc()
	}
	if i.Err != nil {
		return
	}
	m.commits.Inc()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.snap.Commits++
	failed := map[ledger.TopicPartition]bool{}
	for _, c := range i.Failed {
		failed[c.TopicPartition] = true
	}
	for _, c := range i.Commits {
		if !failed[c.TopicPartition] {
			m.offs[c.TopicPartition] = c.Offset
		}
	}
	m.snap.Committed = 0
	for _, o := range m.offs {
		m.snap.Committed += o
	}
}

// OnAssign implements consumer.HookAssign.
func (m *Metrics) OnAssign(consumer.AssignInfo) { m.assigned.Inc() }

// OnRevoke implements consumer.HookRevoke.
func (m *Metrics) OnRevoke(i consumer.RevokeInfo) {
	m.assigned.Dec()
	labels := prometheus.Labels{"topic": i.Topic, "partition": partition(i.TopicPartition)}
	m.lag.Delete(labels)
	m.partWatermark.Delete(labels)
	m.closedThrough.Delete(labels)
	m.mu.Lock()
	delete(m.lags, i.TopicPartition)
	m.mu.Unlock()
}

// OnPartition implements consumer.HookPartition.
func (m *Metrics) OnPartition(i consumer.PartitionInfo) {
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
	m.mu.Lock()
	m.lags[i.TopicPartition] = i.Lag
	m.mu.Unlock()
}

// OnTick implements consumer.HookTick.
func (m *Metrics) OnTick(i consumer.TickInfo) {
	m.uncommitted.Set(float64(i.Pending))
	m.openWindows.Set(float64(i.OpenKeys))
	if !i.MinWatermark.IsZero() {
		m.watermark.Set(unix(i.MinWatermark))
	}
	m.tickDuration.Observe(i.Duration.Seconds())
	m.mu.Lock()
	defer m.mu.Unlock()
	m.snap.Pending = i.Pending
	m.snap.OpenKeys = i.OpenKeys
	m.snap.MinWatermark = i.MinWatermark
	m.snap.Partitions = i.Partitions
	m.snap.Lag = 0
	for _, l := range m.lags {
		if l < 0 {
			m.snap.Lag = -1
			break
		}
		m.snap.Lag += l
	}
}

func partition(tp ledger.TopicPartition) string { return strconv.Itoa(int(tp.Partition)) }

func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
