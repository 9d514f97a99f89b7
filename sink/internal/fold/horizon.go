package fold

import (
	"sync"
	"time"
)

// Pruning bounds: a writer prunes at most once per PruneEvery of its clock, and at most
// PruneLimit folded rows per transaction, so that pruning never makes one write long.
const (
	PruneEvery = time.Minute
	PruneLimit = 64
)

// Pruner decides when a writer prunes folded rows. The zero value never prunes; it is safe
// for concurrent use.
type Pruner struct {
	// Horizon is the resolved horizon (see horizon.Resolve); zero keeps folded rows forever.
	Horizon time.Duration

	mu   sync.Mutex
	last time.Time
}

// Due reports whether a write at now should prune, and the cutoff: folded rows last written
// before it go. The horizon runs on the writers' clock from the fold, not from the window's
// end: a replay of historical data folds windows that ended long ago, and keeps them. Call
// [Pruner.Done] once the write committed.
func (p *Pruner) Due(now time.Time) (cutoff time.Time, ok bool) {
	if p == nil || p.Horizon <= 0 {
		return time.Time{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.last.IsZero() && now.Sub(p.last) < PruneEvery {
		return time.Time{}, false
	}
	return now.Add(-p.Horizon), true
}

// Done records a committed prune at now.
func (p *Pruner) Done(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if now.After(p.last) {
		p.last = now
	}
}
