package figures

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/ledger/consumer"
)

// Figures implements the consumer's hooks and keeps a [Snapshot]. OnMessage may be called
// from the consumer's workers concurrently; it only adds to atomic counters.
type Figures struct {
	consumed, admitted, late, deadLettered atomic.Int64

	mu   sync.Mutex
	snap Snapshot // the figures the other hooks set
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

// New returns empty figures.
func New() *Figures {
	return &Figures{lags: map[ledger.TopicPartition]int64{}, offs: map[ledger.TopicPartition]int64{}}
}

// Snapshot returns the figures. It is safe to call from any goroutine.
func (f *Figures) Snapshot() Snapshot {
	f.mu.Lock()
	s := f.snap
	f.mu.Unlock()
	s.Consumed, s.Admitted, s.Late, s.DeadLettered = f.consumed.Load(), f.admitted.Load(), f.late.Load(), f.deadLettered.Load()
	return s
}

// OnMessage implements consumer.HookMessage.
func (f *Figures) OnMessage(i consumer.MessageInfo) {
	f.consumed.Add(1)
	switch i.Decision {
	case consumer.Admitted:
		f.admitted.Add(1)
	case consumer.Late:
		f.late.Add(1)
	case consumer.DeadLettered:
		f.deadLettered.Add(1)
	}
}

// OnDeadLetter implements consumer.HookDeadLetter.
func (f *Figures) OnDeadLetter(i consumer.DeadLetterInfo) {
	if i.Err == nil {
		f.mu.Lock()
		f.snap.DeadLettersDelivered++
		f.mu.Unlock()
	}
}

// OnWrite implements consumer.HookWrite.
func (f *Figures) OnWrite(i consumer.WriteInfo) {
	if i.Err != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if i.Kind == consumer.WriteClose {
		f.snap.Partials += int64(i.Rows)
	} else {
		f.snap.StateRows += int64(i.Rows)
	}
}

// OnCommit implements consumer.HookCommit.
func (f *Figures) OnCommit(i consumer.CommitInfo) {
	if i.Err != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.snap.Commits++
	failed := map[ledger.TopicPartition]bool{}
	for _, c := range i.Failed {
		failed[c.TopicPartition] = true
	}
	for _, c := range i.Commits {
		if !failed[c.TopicPartition] {
			f.offs[c.TopicPartition] = c.Offset
		}
	}
	f.snap.Committed = 0
	for _, o := range f.offs {
		f.snap.Committed += o
	}
}

// OnRevoke implements consumer.HookRevoke.
func (f *Figures) OnRevoke(i consumer.RevokeInfo) {
	f.mu.Lock()
	delete(f.lags, i.TopicPartition)
	f.mu.Unlock()
}

// OnPartition implements consumer.HookPartition.
func (f *Figures) OnPartition(i consumer.PartitionInfo) {
	f.mu.Lock()
	f.lags[i.TopicPartition] = i.Lag
	f.mu.Unlock()
}

// OnTick implements consumer.HookTick.
func (f *Figures) OnTick(i consumer.TickInfo) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.snap.Pending = i.Pending
	f.snap.OpenKeys = i.OpenKeys
	f.snap.MinWatermark = i.MinWatermark
	f.snap.Partitions = i.Partitions
	f.snap.Lag = 0
	for _, l := range f.lags {
		if l < 0 {
			f.snap.Lag = -1
			break
		}
		f.snap.Lag += l
	}
}
