package sinktest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/streamledger/streamledger/sink"
)

// MemoryConfig configures a [Memory]. Zero fields take the defaults of the sink package.
type MemoryConfig struct {
	Aggregates sink.AggregateSpec
	States     []sink.StateSpec
	// Clock stamps computed_at [time.Now].
	Clock func() time.Time
}

// Upsert is one recorded [Memory.UpsertLatest] call, as prepared (collapsed per key).
type Upsert struct {
	Table string
	Rows  []sink.StateRow
}

// Memory is an in-memory [sink.Sink] and [sink.Reader] with the same semantics as the
// Postgres implementation, for the unit tests of packages that write through a sink. It
// records every successful write and can be told to fail the next ones. It is safe for
// concurrent use.
type Memory struct {
	mu     sync.Mutex
	agg    sink.AggregateSpec
	states map[string]*memState
	clock  func() time.Time

	partials map[sink.Key]map[sink.TopicPartition]memPartial
	merged   map[sink.Key]sink.Aggregate
	progress map[sink.TopicPartition]time.Time

	closes  []sink.CloseBatch
	upserts []Upsert
	fail    []error
}

type memPartial struct {
	end   time.Time
	attrs map[string]string
	stats []byte
}

type memState struct {
	spec sink.StateSpec
	rows map[any]sink.StateRow
}

// NewMemory returns an empty Memory.
func NewMemory(cfg MemoryConfig) (*Memory, error) {
	agg := cfg.Aggregates.WithDefaults()
	if err := agg.Validate(); err != nil {
		return nil, err
	}
	m := &Memory{
		agg:      agg,
		states:   make(map[string]*memState, len(cfg.States)),
		clock:    cfg.Clock,
		partials: make(map[sink.Key]map[sink.TopicPartition]memPartial),
		merged:   make(map[sink.Key]sink.Aggregate),
		progress: make(map[sink.TopicPartition]time.Time),
	}
	if m.clock == nil {
		m.clock = time.Now
	}
	for _, st := range cfg.States {
		if err := st.Validate(); err != nil {
			return nil, err
		}
		if _, dup := m.states[st.Table]; dup {
			return nil, fmt.Errorf("%w: state table %q declared twice", sink.ErrInvalid, st.Table)
		}
		m.states[st.Table] = &memState{spec: st, rows: make(map[any]sink.StateRow)}
	}
	return m, nil
}

// FailNext makes the next len(errs) writes (WriteClose or UpsertLatest) return these errors,
// in order, without writing anything: a processor's tests use it to check that a failed
// write is never treated as durable.
func (m *Memory) FailNext(errs ...error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fail = append(m.fail, errs...)
}

// Closes returns the close batches written so far, as prepared (times in UTC, partials
// collapsed per key and sorted).
func (m *Memory) Closes() []sink.CloseBatch {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.closes)
}

// Upserts returns the state upserts written so far.
func (m *Memory) Upserts() []Upsert {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.upserts)
}

func (m *Memory) injected() error {
	if len(m.fail) == 0 {
		return nil
	}
	err := m.fail[0]
	m.fail = m.fail[1:]
	return err
}

// WriteClose implements [sink.WindowWriter].
func (m *Memory) WriteClose(ctx context.Context, batches ...sink.CloseBatch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	prepared := make([]sink.CloseBatch, len(batches))
	seen := make(map[sink.TopicPartition]bool, len(batches))
	for i, b := range batches {
		if seen[b.Source] {
			return fmt.Errorf("%w: two close batches for %s in one write", sink.ErrInvalid, b.Source)
		}
		seen[b.Source] = true
		var err error
		if prepared[i], err = sink.PrepareClose(m.agg, b); err != nil {
			return err
		}
	}
	if len(prepared) == 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.injected(); err != nil {
		return err
	}
	// Every batch of the call or none: a copy of the store takes the writes, and replaces
	// it only when all of them succeeded.
	saved := m.snapshot()
	for _, b := range prepared {
		if err := m.writeClose(b); err != nil {
			m.restore(saved)
			return err
		}
	}
	return nil
}

// memSnapshot is what writeClose changes.
type memSnapshot struct {
	partials map[sink.Key]map[sink.TopicPartition]memPartial
	merged   map[sink.Key]sink.Aggregate
	progress map[sink.TopicPartition]time.Time
	closes   int
}

func (m *Memory) snapshot() memSnapshot {
	s := memSnapshot{
		partials: make(map[sink.Key]map[sink.TopicPartition]memPartial, len(m.partials)),
		merged:   maps.Clone(m.merged),
		progress: maps.Clone(m.progress),
		closes:   len(m.closes),
	}
	for k, ps := range m.partials {
		s.partials[k] = maps.Clone(ps)
	}
	return s
}

func (m *Memory) restore(s memSnapshot) {
	m.partials, m.merged, m.progress = s.partials, s.merged, s.progress
	m.closes = m.closes[:s.closes]
}

// writeClose writes one prepared batch; called with mu held.
func (m *Memory) writeClose(b sink.CloseBatch) error {
	// Compute every merged row before changing anything, so that a failed merge leaves
	// the store as it was: the batch is atomic.
	now := m.clock().UTC()
	merged := make([]sink.Aggregate, 0, len(b.Partials))
	for _, p := range b.Partials {
		parts := make(map[sink.TopicPartition]memPartial, len(m.partials[p.Key])+1)
		for tp, sp := range m.partials[p.Key] {
			parts[tp] = sp
		}
		parts[b.Source] = mergeAttrs(memPartial{end: p.WindowEnd, attrs: p.Attrs, stats: p.Stats}, parts[b.Source])
		agg, err := m.recompute(p.Key, p.WindowEnd, parts, now)
		if err != nil {
			return err
		}
		merged = append(merged, agg)
	}
	for i, p := range b.Partials {
		ps := m.partials[p.Key]
		if ps == nil {
			ps = make(map[sink.TopicPartition]memPartial)
			m.partials[p.Key] = ps
		}
		ps[b.Source] = mergeAttrs(memPartial{end: p.WindowEnd, attrs: p.Attrs, stats: p.Stats}, ps[b.Source])
		m.merged[p.Key] = merged[i]
	}
	if old, ok := m.progress[b.Source]; !ok || b.ClosedThrough.After(old) {
		m.progress[b.Source] = b.ClosedThrough
	}
	m.closes = append(m.closes, b)
	return nil
}

// mergeAttrs keeps the stored attributes the new partial does not carry (COALESCE).
func mergeAttrs(p, stored memPartial) memPartial {
	if len(stored.attrs) == 0 {
		return p
	}
	attrs := make(map[string]string, len(stored.attrs)+len(p.attrs))
	for k, v := range stored.attrs {
		attrs[k] = v
	}
	for k, v := range p.attrs {
		attrs[k] = v
	}
	p.attrs = attrs
	return p
}

func (m *Memory) recompute(k sink.Key, end time.Time, parts map[sink.TopicPartition]memPartial, now time.Time) (sink.Aggregate, error) {
	sources := make([]sink.TopicPartition, 0, len(parts))
	for tp := range parts {
		sources = append(sources, tp)
	}
	slices.SortFunc(sources, sink.CompareSources)
	stats := make([][]byte, len(sources))
	for i, tp := range sources {
		stats[i] = parts[tp].stats
	}
	sum, err := sink.Merge(m.agg.Quantile, stats...)
	if err != nil {
		return sink.Aggregate{}, err
	}
	agg := sink.Aggregate{Key: k, WindowEnd: end, Summary: sum, ComputedAt: now}
	old, had := m.merged[k]
	for _, name := range m.agg.Attributes {
		v, found := "", false
		for _, tp := range sources {
			if x, ok := parts[tp].attrs[name]; ok {
				v, found = x, true
				break
			}
		}
		if !found && had {
			v, found = old.Attrs[name]
		}
		if found {
			if agg.Attrs == nil {
				agg.Attrs = make(map[string]string)
			}
			agg.Attrs[name] = v
		}
	}
	return agg, nil
}

// UpsertLatest implements [sink.StateWriter].
func (m *Memory) UpsertLatest(ctx context.Context, table string, rows []sink.StateRow) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.states[table]
	if !ok {
		return fmt.Errorf("%w: state table %q is not in the sink's configuration", sink.ErrInvalid, table)
	}
	rows, err := sink.PrepareLatest(st.spec, rows)
	if err != nil {
		return err
	}
	if err := m.injected(); err != nil {
		return err
	}
	for _, r := range rows {
		k, _ := sink.DedupKey(nil, r.Key)
		if old, ok := st.rows[k]; ok && r.ObservedAt.Before(old.ObservedAt) {
			continue
		}
		st.rows[k] = sink.StateRow{Key: slices.Clone(r.Key), ObservedAt: r.ObservedAt, Values: slices.Clone(r.Values)}
	}
	m.upserts = append(m.upserts, Upsert{Table: table, Rows: rows})
	return nil
}

// ClosedThrough implements [sink.ProgressReader].
func (m *Memory) ClosedThrough(ctx context.Context, tps ...sink.TopicPartition) (map[sink.TopicPartition]time.Time, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[sink.TopicPartition]time.Time, len(tps))
	for _, tp := range tps {
		if t, ok := m.progress[tp]; ok {
			out[tp] = t
		}
	}
	return out, nil
}

// CompleteThrough implements [sink.Reader].
func (m *Memory) CompleteThrough(ctx context.Context, topics ...string) (time.Time, bool, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.completeThrough(topics)
}

func (m *Memory) completeThrough(topics []string) (time.Time, bool, error) {
	var out time.Time
	found := false
	for tp, t := range m.progress {
		if !slices.Contains(topics, tp.Topic) {
			continue
		}
		if !found || t.Before(out) {
			out, found = t, true
		}
	}
	return out, found, nil
}

// Aggregate implements [sink.Reader].
func (m *Memory) Aggregate(ctx context.Context, k sink.Key) (sink.Aggregate, bool, error) {
	if err := ctx.Err(); err != nil {
		return sink.Aggregate{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k.WindowStart = k.WindowStart.UTC()
	a, ok := m.merged[k]
	if !ok {
		return sink.Aggregate{}, false, nil
	}
	return m.withComplete(a), true, nil
}

// Aggregates implements [sink.Reader].
func (m *Memory) Aggregates(ctx context.Context, windowStart time.Time) ([]sink.Aggregate, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []sink.Aggregate
	for k, a := range m.merged {
		if k.WindowStart.Equal(windowStart) {
			out = append(out, m.withComplete(a))
		}
	}
	slices.SortFunc(out, func(a, b sink.Aggregate) int { return sink.CompareKeys(a.Key, b.Key) })
	return out, nil
}

func (m *Memory) withComplete(a sink.Aggregate) sink.Aggregate {
	var topics []string
	for tp := range m.partials[a.Key] {
		if !slices.Contains(topics, tp.Topic) {
			topics = append(topics, tp.Topic)
		}
	}
	through, ok, _ := m.completeThrough(topics)
	a.Complete = ok && !a.WindowEnd.After(through)
	if a.Attrs != nil {
		attrs := make(map[string]string, len(a.Attrs))
		for k, v := range a.Attrs {
			attrs[k] = v
		}
		a.Attrs = attrs
	}
	return a
}

// Latest implements [sink.Reader].
func (m *Memory) Latest(ctx context.Context, table string, key ...any) (sink.StateRow, bool, error) {
	if err := ctx.Err(); err != nil {
		return sink.StateRow{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.states[table]
	if !ok {
		return sink.StateRow{}, false, fmt.Errorf("%w: state table %q is not in the sink's configuration", sink.ErrInvalid, table)
	}
	if len(key) != len(st.spec.Key) {
		return sink.StateRow{}, false, fmt.Errorf("%w: state table %q has %d key columns, got %d values", sink.ErrInvalid, table, len(st.spec.Key), len(key))
	}
	k, _ := sink.DedupKey(nil, key)
	r, ok := st.rows[k]
	if !ok {
		return sink.StateRow{}, false, nil
	}
	return sink.StateRow{Key: slices.Clone(r.Key), ObservedAt: r.ObservedAt, Values: slices.Clone(r.Values)}, true, nil
}

var (
	_ sink.Sink   = (*Memory)(nil)
	_ sink.Reader = (*Memory)(nil)
)
