package bench

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streamledger/streamledger/examples/credits/internal/service"
	"github.com/streamledger/streamledger/ledger"
)

// meter watches one service run through its hooks: batches, decisions, commits, and the time
// from produce to commit of every record when the producer is known. It cancels the run once
// every partition is committed through its end.
type meter struct {
	cancel  context.CancelFunc
	pr      *producer // nil: no latencies
	batches atomic.Int64
	decided atomic.Int64
	firstNs atomic.Int64

	mu        sync.Mutex
	ends      []int64 // nil until known
	committed []int64
	doneAt    time.Time
	latencies []time.Duration
}

func newMeter(partitions int, cancel context.CancelFunc, pr *producer) *meter {
	m := &meter{cancel: cancel, pr: pr, committed: make([]int64, partitions)}
	for i := range m.committed {
		m.committed[i] = -1
	}
	return m
}

// hooks returns the service hooks that feed the meter.
func (m *meter) hooks() service.Hooks {
	return service.Hooks{
		BeforeApply: func([]service.Delivery) { m.batches.Add(1) },
		Decided: func(service.Decision) {
			if m.decided.Add(1) == 1 {
				m.firstNs.Store(time.Now().UnixNano())
			}
		},
		Committed: m.onCommit,
	}
}

func (m *meter) onCommit(cs []ledger.Commit) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range cs {
		p := c.Partition
		if m.pr != nil {
			for off := max(m.committed[p], 0); off < c.Offset; off++ {
				if at, ok := m.pr.producedAt(p, off); ok {
					m.latencies = append(m.latencies, now.Sub(at))
				}
			}
		}
		m.committed[p] = max(m.committed[p], c.Offset)
	}
	m.checkDone(now)
}

// setEnds tells the meter the end offset of every partition.
func (m *meter) setEnds(ends []int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ends = ends
	m.checkDone(time.Now())
}

// checkDone ends the run once every partition is committed through its end. Called with mu.
func (m *meter) checkDone(now time.Time) {
	if m.ends == nil || !m.doneAt.IsZero() {
		return
	}
	for p, end := range m.ends {
		if end > 0 && m.committed[p] < end {
			return
		}
	}
	m.doneAt = now
	m.cancel()
}

// span returns the time from the first decision to the commit of the last record, and whether
// the run got there.
func (m *meter) span() (time.Duration, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.doneAt.IsZero() || m.firstNs.Load() == 0 {
		return 0, false
	}
	return m.doneAt.Sub(time.Unix(0, m.firstNs.Load())), true
}

// Latency summarises the produce-to-commit times of a run.
type Latency struct {
	Records       int
	P50, P99, Max time.Duration
}

func (m *meter) latency() Latency {
	m.mu.Lock()
	defer m.mu.Unlock()
	ls := slices.Clone(m.latencies)
	if len(ls) == 0 {
		return Latency{}
	}
	slices.Sort(ls)
	at := func(q float64) time.Duration { return ls[min(int(q*float64(len(ls))), len(ls)-1)] }
	return Latency{Records: len(ls), P50: at(0.50), P99: at(0.99), Max: ls[len(ls)-1]}
}
