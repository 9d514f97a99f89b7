package watermark

import (
	"fmt"
	"iter"
	"slices"
	"time"
)

// Set holds the partitions a consumer owns, keyed by K (a topic-partition
// pair, for example), and computes the global watermark [Set.Min]. Iteration
// and [Set.Tick] follow assignment order, so they are deterministic.
//
// The zero value is an empty set with the zero [Config]. A Set is not safe for
// concurrent use: the consumer loop owns it.
type Set[K comparable] struct {
	cfg     Config
	entries []entry[K] // assignment order; iterated without map lookups
	parts   map[K]*Partition
}

type entry[K comparable] struct {
	key K
	p   *Partition
}

// NewSet returns an empty set whose partitions all use cfg.
func NewSet[K comparable](cfg Config) *Set[K] {
	return &Set[K]{cfg: cfg.resolve(), parts: make(map[K]*Partition)}
}

// Config returns the configuration in effect, defaults filled in.
func (s *Set[K]) Config() Config { return s.cfg.resolved() }

// Assign adds the partition key and restores its watermark from what
// survived the previous owner (see [Partition.Restore]; a zero RestorePoint
// is a fresh partition). It returns an error wrapping [ErrAssigned] if key is
// already in the set. It reads the clock once.
func (s *Set[K]) Assign(key K, from RestorePoint) (*Partition, error) {
	if _, ok := s.parts[key]; ok {
		return nil, fmt.Errorf("%w: %v", ErrAssigned, key)
	}
	if s.parts == nil {
		s.parts = make(map[K]*Partition)
	}
	p := newPartition(s.cfg)
	if err := p.Restore(from); err != nil {
		return nil, err // unreachable: a new partition is fresh
	}
	s.parts[key] = p
	s.entries = append(s.entries, entry[K]{key, p})
	return p, nil
}

// Revoke removes the partition key and reports whether it was in the set.
func (s *Set[K]) Revoke(key K) bool {
	if _, ok := s.parts[key]; !ok {
		return false
	}
	delete(s.parts, key)
	s.entries = slices.DeleteFunc(s.entries, func(e entry[K]) bool { return e.key == key })
	return true
}

// Partition returns the partition key, if assigned.
func (s *Set[K]) Partition(key K) (*Partition, bool) {
	p, ok := s.parts[key]
	return p, ok
}

// Len returns the number of assigned partitions.
func (s *Set[K]) Len() int { return len(s.entries) }

// All yields the assigned partitions in assignment order.
func (s *Set[K]) All() iter.Seq2[K, *Partition] {
	return func(yield func(K, *Partition) bool) {
		for _, e := range s.entries {
			if !yield(e.key, e.p) {
				return
			}
		}
	}
}

// Tick reads the clock once and ticks every partition with that time (see
// [Partition.Tick]). It returns, in assignment order, the keys whose
// watermark an idle advance raised, nil if none: write their progress before
// deciding any later message of theirs.
func (s *Set[K]) Tick() []K {
	now := s.cfg.now()
	var advanced []K
	for _, e := range s.entries {
		if e.p.tick(now) {
			advanced = append(advanced, e.key)
		}
	}
	return advanced
}

// Min returns the global watermark: the minimum of wm(P) over the active
// (non-idle) partitions. It serves readiness of merged results only; it must
// never decide whether an event is late, which is [Partition.IsLate]'s job.
//
//   - If any active partition has no watermark yet, Min is unknown (false):
//     that partition may still deliver events for any window.
//   - If no partition is active (all idle, or the set is empty), Min is the
//     minimum of wm(P) over the partitions that have one: every partition has
//     closed through it, and an idle partition's watermark keeps moving with
//     the wall clock, so Min still advances. Partitions without a watermark
//     are then idle and have no data, so they hold nothing back. With no
//     watermark at all, Min is unknown (false).
//
// Min is computed from the current state and is not monotone: it can go back
// when an idle partition rejoins or a partition is assigned.
func (s *Set[K]) Min() (time.Time, bool) {
	var (
		minActive, minAll time.Time
		anyActive, anyAll bool
	)
	for _, e := range s.entries {
		p := e.p
		if !p.idle {
			if !p.wmKnown {
				return time.Time{}, false
			}
			if !anyActive || p.wm.Before(minActive) {
				minActive, anyActive = p.wm, true
			}
		}
		if p.wmKnown && (!anyAll || p.wm.Before(minAll)) {
			minAll, anyAll = p.wm, true
		}
	}
	if anyActive {
		return minActive, true
	}
	return minAll, anyAll
}
