package prom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/streamledger/streamledger/dlq/dlqkafka"
)

// dlqMetrics are the metrics of the dead-letter producer's hooks: what only the producer
// knows of a letter (its produce retries and how long they took). The letter's outcome is the
// consumer's (processor_dead_letters_total).
type dlqMetrics struct {
	retries *prometheus.CounterVec
	latency *prometheus.HistogramVec
}

func (m *dlqMetrics) init(cs []prometheus.Collector) []prometheus.Collector {
	m.retries = counterVec(&cs, "processor_dlq_retries_total", "Dead-letter produce attempts after a failed one, by source topic.", "topic")
	m.latency = histogramVec(&cs, "processor_dlq_delivery_seconds", "Time from a dead letter's Send to its outcome, by source topic.", "topic")
	return cs
}

// OnDelivery implements dlqkafka.HookDelivery.
func (m *dlqMetrics) OnDelivery(i dlqkafka.DeliveryInfo) {
	if i.Attempts > 1 {
		m.retries.WithLabelValues(i.Source).Add(float64(i.Attempts - 1))
	}
	m.latency.WithLabelValues(i.Source).Observe(i.Latency.Seconds())
}
