package prom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/streamledger/streamledger/dlq/dlqkafka"
)

// dlqMetrics are the metrics of the dead-letter producer's hooks.
type dlqMetrics struct {
	sends, deliveries *prometheus.CounterVec
	retries           *prometheus.CounterVec
	latency           *prometheus.HistogramVec
}

func (m *dlqMetrics) init(cs []prometheus.Collector) []prometheus.Collector {
	m.sends = counterVec(&cs, "processor_dlq_sends_total", "Dead letters handed to the producer, by source topic and result (ok, error: nothing sent).", "topic", "result")
	m.deliveries = counterVec(&cs, "processor_dlq_deliveries_total", "Dead-letter outcomes, by source topic and result (delivered, failed).", "topic", "result")
	m.retries = counterVec(&cs, "processor_dlq_retries_total", "Dead-letter produce attempts after a failed one, by source topic.", "topic")
	m.latency = histogramVec(&cs, "processor_dlq_delivery_seconds", "Time from a dead letter's Send to its outcome, by source topic.", "topic")
	return cs
}

// OnSend implements dlqkafka.HookSend.
func (m *dlqMetrics) OnSend(i dlqkafka.SendInfo) {
	result := "ok"
	if i.Err != nil {
		result = "error"
	}
	m.sends.WithLabelValues(i.Source, result).Inc()
}

// OnDelivery implements dlqkafka.HookDelivery.
func (m *dlqMetrics) OnDelivery(i dlqkafka.DeliveryInfo) {
	m.deliveries.WithLabelValues(i.Source, deliveryResult(i.Err)).Inc()
	if i.Attempts > 1 {
		m.retries.WithLabelValues(i.Source).Add(float64(i.Attempts - 1))
	}
	m.latency.WithLabelValues(i.Source).Observe(i.Latency.Seconds())
}
