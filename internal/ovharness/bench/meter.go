package bench

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync/atomic"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/streamledger/streamledger/examples/ov/tables"
	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/ledger/consumer"
)

// probeGrowth is how much the open keys must grow past the last probe before the meter forces
// a GC to measure the live heap again: a few probes per run, not one per tick.
const probeGrowth = 1.15

// decodeSample is one in how many messages (by offset) the meter times the decoding of,
// counting each timed one for that many: timing every message would add two clock reads and
// a shared counter's update to each, which the pipeline's rate would then include.
const decodeSample = 8

// meter implements the consumer's hooks and wraps the handlers. The handlers and OnMessage
// run on the consumer's workers, concurrently: they touch only the atomics. Everything else
// runs on the consumer's polling goroutine; drained, done and the atomics are safe anywhere.
type meter struct {
	total         int64
	ends          map[partKey]int64
	left          int // partitions not yet committed through their end
	decidedAtomic atomic.Int64
	firstNs       atomic.Int64 // wall clock of the first decode, Unix ns
	lastNs        atomic.Int64 // wall clock of the last decision, Unix ns
	decodeNs      atomic.Int64 // decoding time summed over the workers

	lastCommit                     time.Time
	tickWhileConsuming, probe      time.Duration
	waitWhileConsuming             time.Duration // for the sink (TickInfo.Waited)
	ticks                          []time.Duration
	writeState, writeClose, commit time.Duration
	writesState, writesClose       int64
	rowsState, rowsPartials        int64
	peakPending                    int64
	peakOpenKeys                   int

	baseHeap, peakHeapDelta uint64
	probeKeys               int
	probeHeapDelta          uint64
	atProbe                 func(openKeys int) // Config.AtProbe
}

func newMeter(total int64, ends map[partKey]int64) *meter {
	left := 0
	for _, e := range ends {
		if e > 0 {
			left++
		}
	}
	return &meter{total: total, ends: ends, left: left}
}

func (m *meter) wrap(_ string, h consumer.Handler[tables.Key]) consumer.Handler[tables.Key] {
	return func(msg *kafka.Message) (consumer.Event[tables.Key], error) {
		if m.firstNs.Load() == 0 {
			m.firstNs.CompareAndSwap(0, time.Now().UnixNano())
		}
		if msg.TopicPartition.Offset%decodeSample != 0 {
			return h(msg)
		}
		t := time.Now()
		ev, err := h(msg)
		m.decodeNs.Add(decodeSample * int64(time.Since(t)))
		return ev, err
	}
}

// OnMessage implements consumer.HookMessage.
func (m *meter) OnMessage(consumer.MessageInfo) {
	if m.decidedAtomic.Add(1) == m.total {
		m.lastNs.Store(time.Now().UnixNano())
	}
}

func (m *meter) decided() int64 { return m.decidedAtomic.Load() }

// OnTick implements consumer.HookTick.
func (m *meter) OnTick(i consumer.TickInfo) {
	m.ticks = append(m.ticks, i.Duration)
	if d := m.decided(); d > 0 && d < m.total {
		m.tickWhileConsuming += i.Duration
		m.waitWhileConsuming += i.Waited
	}
	m.peakPending = max(m.peakPending, i.Pending)
	m.peakOpenKeys = max(m.peakOpenKeys, i.OpenKeys)
	if i.OpenKeys > 1000 && float64(i.OpenKeys) > probeGrowth*float64(m.probeKeys) {
		start := time.Now()
		runtime.GC()
		h := liveHeap()
		d := time.Since(start)
		m.probe += d
		if n := m.decided(); n > 0 && n < m.total {
			m.tickWhileConsuming += d
		}
		delta := uint64(0)
		if h > m.baseHeap {
			delta = h - m.baseHeap
		}
		m.probeKeys, m.probeHeapDelta = i.OpenKeys, delta
		m.peakHeapDelta = max(m.peakHeapDelta, delta)
		if m.atProbe != nil {
			m.atProbe(i.OpenKeys)
		}
	}
}

// OnWrite implements consumer.HookWrite.
func (m *meter) OnWrite(i consumer.WriteInfo) {
	if i.Err != nil {
		return
	}
	switch i.Kind {
	case consumer.WriteState:
		m.writeState += i.Duration
		m.writesState++
		m.rowsState += int64(i.Rows)
	case consumer.WriteClose:
		m.writeClose += i.Duration
		m.writesClose++
		m.rowsPartials += int64(i.Rows)
	}
}

// OnCommit implements consumer.HookCommit.
func (m *meter) OnCommit(i consumer.CommitInfo) {
	m.commit += i.Duration
	if i.Err != nil {
		return
	}
	for _, c := range i.Commits {
		if slices.ContainsFunc(i.Failed, func(f ledger.Commit) bool { return f.TopicPartition == c.TopicPartition }) {
			continue
		}
		k := partKey{c.Topic, c.Partition}
		end, ok := m.ends[k]
		if !ok || end == 0 || c.Offset < end {
			continue
		}
		m.ends[k] = 0 // reached: counted once
		m.left--
	}
	if m.left == 0 && m.decided() >= m.total && m.lastCommit.IsZero() {
		m.lastCommit = time.Now()
	}
}

// done reports whether every partition was committed through its end; call it after Run.
func (m *meter) done() bool { return !m.lastCommit.IsZero() }

// progress says how far the pipeline got, from any goroutine.
func (m *meter) progress() string {
	return fmt.Sprintf("%d of %d records decided", m.decided(), m.total)
}

// fill writes the figures into res; call it after Run returned. cpu is the process's CPU
// time and gc the garbage collector's during the pipeline phase.
func (m *meter) fill(res *Result, c consumer.Counters, cpu, gc time.Duration) {
	first, last := time.Unix(0, m.firstNs.Load()), time.Unix(0, m.lastNs.Load())
	elapsed := m.lastCommit.Sub(first) - m.probe
	sec := elapsed.Seconds()
	res.Pipeline = Rate{Events: c.Consumed, Seconds: sec, EventsPerSec: float64(c.Consumed) / sec}
	res.Admitted, res.Late, res.DeadLettered = c.Admitted, c.Late, c.DeadLettered
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(max(m.decided(), 1)) }
	decode := time.Duration(m.decodeNs.Load())
	res.Stages = Stages{
		CPUNsPerEvent:      per(cpu),
		GCNsPerEvent:       per(gc),
		DecodeNsPerEvent:   per(decode),
		TickNsPerEvent:     per(sum(m.ticks)),
		SinkWaitNsPerEvent: per(m.waitWhileConsuming),
		CPUSeconds:         cpu.Seconds(),
		GCSeconds:          gc.Seconds(),
		DecodeSeconds:      decode.Seconds(),
		TickSeconds:        sum(m.ticks).Seconds(),
		SinkWaitSeconds:    m.waitWhileConsuming.Seconds(),
		StateWriteSeconds:  m.writeState.Seconds(),
		CloseWriteSeconds:  m.writeClose.Seconds(),
		CommitSeconds:      m.commit.Seconds(),
		DrainSeconds:       m.lastCommit.Sub(last).Seconds(),
		GCProbeSeconds:     m.probe.Seconds(),
		StateWrites:        m.writesState,
		CloseWrites:        m.writesClose,
		Ticks:              len(m.ticks),
		TickWhileConsuming: m.tickWhileConsuming.Seconds(),
	}
	if sec > 0 {
		res.SinkWaitShare = m.waitWhileConsuming.Seconds() / sec
	}
	sorted := slices.Clone(m.ticks)
	slices.Sort(sorted)
	res.TickP50Ms = ms(quantile(sorted, 0.5))
	res.TickP99Ms = ms(quantile(sorted, 0.99))
	res.TickMaxMs = ms(quantile(sorted, 1))
	res.PeakPending = m.peakPending
	res.PeakOpenKeys = m.peakOpenKeys
	res.SizeMeasured = float64(m.peakOpenKeys) / SeedOpenWindows
	res.RowsState, res.RowsPartials = m.rowsState, m.rowsPartials
	res.RowsPerSec = float64(m.rowsState+m.rowsPartials) / sec
	res.HeapBase = m.baseHeap
	res.HeapPeakGrowth = m.peakHeapDelta
	if m.probeKeys > 0 {
		res.BytesPerOpenKey = float64(m.probeHeapDelta) / float64(m.probeKeys)
		res.ProbeOpenKeys = m.probeKeys
	}
}

func sum(ds []time.Duration) time.Duration {
	var t time.Duration
	for _, d := range ds {
		t += d
	}
	return t
}

// quantile of sorted durations by the nearest rank.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// liveHeap is the live heap marked by the last GC.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
