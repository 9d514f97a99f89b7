package prom

import (
	"maps"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/streamledger/streamledger/dlq/dlqkafka"
	"github.com/streamledger/streamledger/ledger/consumer"
	"github.com/streamledger/streamledger/sink"
)

// Metrics implements the hooks of the consumer, the sink and the dead-letter producer and
// exports what they report. Create it with [New].
type Metrics struct {
	consumerMetrics
	sinkMetrics
	dlqMetrics
}

// The hooks Metrics implements.
var (
	_ consumer.HookMessage    = (*Metrics)(nil)
	_ consumer.HookDeadLetter = (*Metrics)(nil)
	_ consumer.HookWrite      = (*Metrics)(nil)
	_ consumer.HookCommit     = (*Metrics)(nil)
	_ consumer.HookAssign     = (*Metrics)(nil)
	_ consumer.HookRevoke     = (*Metrics)(nil)
	_ consumer.HookPartition  = (*Metrics)(nil)
	_ consumer.HookTick       = (*Metrics)(nil)
	_ sink.HookWriteClose     = (*Metrics)(nil)
	_ sink.HookUpsertLatest   = (*Metrics)(nil)
	_ dlqkafka.HookDelivery   = (*Metrics)(nil)
)

// New registers the metrics with reg; nil means prometheus.DefaultRegisterer. It fails if
// reg refuses one of them, for example because another Metrics registered it before.
func New(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		reg = prometheus.DefaultRegisterer
	}
	m := &Metrics{}
	var cs []prometheus.Collector
	cs = m.consumerMetrics.init(cs)
	cs = m.sinkMetrics.init(cs)
	cs = m.dlqMetrics.init(cs)
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// durationBuckets are the buckets of every duration histogram: 1 ms to about 16 s.
var durationBuckets = prometheus.ExponentialBuckets(0.001, 2, 15)

func counterVec(cs *[]prometheus.Collector, name, help string, labels ...string) *prometheus.CounterVec {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	*cs = append(*cs, v)
	return v
}

func counter(cs *[]prometheus.Collector, name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	*cs = append(*cs, c)
	return c
}

func gauge(cs *[]prometheus.Collector, name, help string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	*cs = append(*cs, g)
	return g
}

func gaugeVec(cs *[]prometheus.Collector, name, help string, labels ...string) *prometheus.GaugeVec {
	v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	*cs = append(*cs, v)
	return v
}

func histogramVec(cs *[]prometheus.Collector, name, help string, labels ...string) *prometheus.HistogramVec {
	v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: durationBuckets}, labels)
	*cs = append(*cs, v)
	return v
}

// byTopic holds one value per topic, created on first use. Reads take no lock and do not
// allocate: the map is replaced, never changed, when a topic is added.
type byTopic[V any] struct {
	m    atomic.Pointer[map[string]V]
	mu   sync.Mutex // serializes additions
	newV func(topic string) V
}

func (b *byTopic[V]) get(topic string) V {
	if m := b.m.Load(); m != nil {
		if v, ok := (*m)[topic]; ok {
			return v
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	old := b.m.Load()
	if old != nil {
		if v, ok := (*old)[topic]; ok {
			return v
		}
	}
	next := map[string]V{}
	if old != nil {
		next = maps.Clone(*old)
	}
	v := b.newV(topic)
	next[topic] = v
	b.m.Store(&next)
	return v
}
