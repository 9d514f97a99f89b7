package sinktest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/streamledger/streamledger/internal/horizon"
	"github.com/streamledger/streamledger/internal/keyindex"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/fold"
	"github.com/streamledger/streamledger/sink/internal/latest"
	"github.com/streamledger/streamledger/sink/internal/merge"
	"github.com/streamledger/streamledger/sink/internal/specs"
)

// MemoryConfig configures a [Memory]. In every field, zero means the default the field
// states; a negative value is accepted only where the field says what it means, and
// [NewMemory] refuses it anywhere else with an error wrapping [sink.ErrConfig] that names the
// field.
type MemoryConfig struct {
	// Aggregates describes the merged rows (see [sink.AggregateSpec] for its defaults).
	Aggregates sink.AggregateSpec
	// States are the last-write-wins tables the sink may upsert into.
	States []sink.StateSpec
	// Clock stamps computed_at and places the pruning horizon. Nil means time.Now (the
	// default).
	Clock func() time.Time
	// Horizon is how long a folded window is kept after it was folded (see package sink,
	// Complete windows and merged rows). Zero means 7 days (the default); negative means
	// folded windows are kept forever.
	Horizon time.Duration
	// SourceRetention is how far back the source can redeliver; a Horizon shorter than it is
	// refused with an error wrapping [sink.ErrHorizon]. Zero declares nothing (the default);
	// negative means the source keeps records forever, which only a negative Horizon covers.
	SourceRetention time.Duration
}

// Upsert is one recorded [Memory.UpsertLatest] call, as prepared (collapsed per key).
type Upsert struct {
	Table string
	Rows  []sink.StateRow
}

// Memory is an in-memory [sink.Sink], [sink.Reader], [sink.GatedWindowWriter] and
// [sink.TableDescriber] with the same semantics as the SQL implementations (all plan their
// close writes with the same planner), for the unit tests of packages that write through a
// sink. It records every successful write and can be told to fail the next ones. It is safe for concurrent use.
type Memory struct {
	mu     sync.Mutex
	agg    sink.AggregateSpec
	states map[string]*memState
	clock  func() time.Time
	pruner *fold.Pruner
	codec  *fold.Codec

	progress map[sink.TopicPartition]fold.Progress
	topics   map[string]bool
	partials map[time.Time]map[sink.TopicPartition]fold.Partials
	folded   map[time.Time]fold.Folded
	foldedAt map[time.Time]time.Time // when each folded window was last written
	merged   map[sink.Key]sink.Aggregate
	windows  map[time.Time]int // merged rows per window start

	closes  []sink.CloseBatch
	upserts []Upsert
	fail    []error
}

type memState struct {
	spec sink.StateSpec
	rows map[any]sink.StateRow
}

// NewMemory returns an empty Memory.
func NewMemory(cfg MemoryConfig) (*Memory, error) {
	agg := specs.WithDefaults(cfg.Aggregates)
	if err := specs.CheckAggregate("MemoryConfig.Aggregates", agg); err != nil {
		return nil, err
	}
	h, err := horizon.Resolve(cfg.Horizon, cfg.SourceRetention, "MemoryConfig.Horizon", "MemoryConfig.SourceRetention")
	if err != nil {
		return nil, err
	}
	codec, err := fold.NewCodec()
	if err != nil {
		return nil, err
	}
	m := &Memory{
		agg:      agg,
		codec:    codec,
		states:   make(map[string]*memState, len(cfg.States)),
		clock:    cfg.Clock,
		pruner:   &fold.Pruner{Horizon: h},
		progress: make(map[sink.TopicPartition]fold.Progress),
		topics:   make(map[string]bool),
		partials: make(map[time.Time]map[sink.TopicPartition]fold.Partials),
		folded:   make(map[time.Time]fold.Folded),
		foldedAt: make(map[time.Time]time.Time),
		merged:   make(map[sink.Key]sink.Aggregate),
		windows:  make(map[time.Time]int),
	}
	if m.clock == nil {
		m.clock = time.Now
	}
	for i, st := range cfg.States {
		if err := specs.CheckState(fmt.Sprintf("MemoryConfig.States[%d]", i), st); err != nil {
			return nil, err
		}
		if _, dup := m.states[st.Table]; dup {
			return nil, fmt.Errorf("%w: MemoryConfig.States[%d]: state table %q declared twice", sink.ErrConfig, i, st.Table)
		}
		m.states[st.Table] = &memState{spec: st, rows: make(map[any]sink.StateRow)}
	}
	return m, nil
}

// FailNext makes the next len(errs) writes (WriteClose or UpsertLatest calls) return these
// errors, in order, without writing anything: a consumer's tests use it to check that a
// failed write is never treated as durable.
func (m *Memory) FailNext(errs ...error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fail = append(m.fail, errs...)
}

// Closes returns the close batches written so far, as prepared (times in UTC, partials
// collapsed per key and sorted), in the order of the calls and of each call's batches.
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

// WriteCloseGated implements [sink.GatedWindowWriter]. Memory has no transaction to make
// ahead of its commit: it calls gate before it writes anything, and then writes as
// WriteClose does.
func (m *Memory) WriteCloseGated(ctx context.Context, gate func(context.Context) error, batches ...sink.CloseBatch) error {
	if gate != nil {
		if err := gate(ctx); err != nil {
			return fmt.Errorf("sinktest: close not committed: %w", err)
		}
	}
	return m.WriteClose(ctx, batches...)
}

// WriteClose implements [sink.WindowWriter]: it plans the call from the stored rows and
// applies the plan. Every batch of the call is written, or none.
func (m *Memory) WriteClose(ctx context.Context, batches ...sink.CloseBatch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c, err := fold.NewCall(m.codec, m.agg, batches)
	if err != nil || len(batches) == 0 {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.injected(); err != nil {
		return err
	}
	// Pruning is part of the call, before its reads, as in a transaction: a window pruned
	// now is final for the call.
	now := sink.AtPrecision(m.clock())
	var pruned []time.Time
	cutoff, prune := m.pruner.Due(now)
	if prune {
		pruned = m.expired(cutoff)
	}
	c.SetProgress(slices.Collect(maps.Values(m.progress)), slices.Collect(maps.Keys(m.topics)))
	partials, folded, final := m.read(c)
	folded = slices.DeleteFunc(folded, func(f fold.Folded) bool { return slices.ContainsFunc(pruned, f.Start.Equal) })
	plan, err := c.Plan(partials, folded, final)
	if err != nil {
		return err
	}
	w, err := m.written(plan)
	if err != nil {
		return err
	}
	for _, s := range pruned {
		delete(m.folded, s)
		delete(m.foldedAt, s)
	}
	if prune {
		m.pruner.Done(now)
	}
	m.apply(plan, w, now)
	m.closes = append(m.closes, c.Batches()...)
	return nil
}

// read returns what fold.Call.Plan asks for: the compact rows of the call's (window,
// source) pairs and of the complete windows, the folded rows of those windows and of the
// call's, and which of the call's windows have merged rows.
func (m *Memory) read(c *fold.Call) ([]fold.Partials, []fold.Folded, []time.Time) {
	var partials []fold.Partials
	wins := map[time.Time]bool{}
	starts, srcs := c.Pairs()
	for i, s := range starts {
		if p, ok := m.partials[s][srcs[i]]; ok {
			partials = append(partials, p)
		}
	}
	if through, ok := c.Through(); ok {
		for _, rows := range m.partials {
			for _, p := range rows {
				if !p.End.After(through) {
					partials = append(partials, p)
				}
			}
		}
	}
	for _, p := range partials {
		wins[p.Start] = true
	}
	var final []time.Time
	for _, s := range c.Windows() {
		wins[s] = true
		if m.windows[s] > 0 {
			final = append(final, s)
		}
	}
	var folded []fold.Folded
	for s := range wins {
		if f, ok := m.folded[s]; ok {
			folded = append(folded, f)
		}
	}
	return dedupPartials(partials), folded, final
}

// dedupPartials drops repeated (window, source) rows.
func dedupPartials(ps []fold.Partials) []fold.Partials {
	type id struct {
		start time.Time
		src   sink.TopicPartition
	}
	seen := map[id]bool{}
	out := ps[:0]
	for _, p := range ps {
		if !seen[id{p.Start, p.Source}] {
			seen[id{p.Start, p.Source}] = true
			out = append(out, p)
		}
	}
	return out
}

// expired returns the oldest folded windows last written before cutoff, at most
// fold.PruneLimit: those a call prunes.
func (m *Memory) expired(cutoff time.Time) []time.Time {
	var old []time.Time
	for s, at := range m.foldedAt {
		if at.Before(cutoff) {
			old = append(old, s)
		}
	}
	slices.SortFunc(old, time.Time.Compare)
	return old[:min(len(old), fold.PruneLimit)]
}

// written is what a plan writes besides its own fields: the merged rows and the folded rows,
// decoded as a read would.
type written struct {
	rows   []fold.Row
	folded []fold.Folded
}

// written makes what p writes before anything is applied, so that a plan that fails
// changes nothing.
func (m *Memory) written(p *fold.Plan) (written, error) {
	var w written
	blobs, err := p.Merged(0, func(rows []fold.Row, _ bool) error {
		w.rows = append(w.rows, rows...)
		return nil
	})
	if err != nil {
		return written{}, err
	}
	for _, f := range blobs {
		b, err := m.codec.Decode(f.Blob, m.agg.Attributes)
		if err != nil {
			return written{}, err
		}
		w.folded = append(w.folded, fold.Folded{Start: f.Start, End: f.End, Sources: b.Sources, Entries: b.Entries})
	}
	return w, nil
}

// apply writes a plan and what it makes; called with mu held.
func (m *Memory) apply(p *fold.Plan, w written, now time.Time) {
	for _, pr := range p.Progress {
		m.progress[pr.Source] = pr
	}
	for _, t := range p.Topics {
		m.topics[t] = true
	}
	for _, r := range w.rows {
		m.putMerged(r, now)
	}
	for _, s := range p.Delete {
		delete(m.partials, s)
	}
	for _, pa := range p.Partials {
		rows := m.partials[pa.Start]
		if rows == nil {
			rows = make(map[sink.TopicPartition]fold.Partials)
			m.partials[pa.Start] = rows
		}
		rows[pa.Source] = pa
	}
	for _, f := range w.folded {
		m.folded[f.Start] = f
		m.foldedAt[f.Start] = now
	}
}

// putMerged writes one merged row: every column replaced, attributes COALESCE(new, stored).
func (m *Memory) putMerged(r fold.Row, now time.Time) {
	old, had := m.merged[r.Key]
	agg := sink.Aggregate{Key: r.Key, WindowEnd: r.End, Summary: r.Summary, ComputedAt: now}
	for j, name := range m.agg.Attributes {
		v, found := "", r.Attrs[j] != nil
		if found {
			v = *r.Attrs[j]
		} else if had {
			v, found = old.Attrs[name]
		}
		if found {
			if agg.Attrs == nil {
				agg.Attrs = make(map[string]string)
			}
			agg.Attrs[name] = v
		}
	}
	if !had {
		m.windows[r.WindowStart]++
	}
	m.merged[r.Key] = agg
}

// UpsertLatest implements [sink.StateWriter].
func (m *Memory) UpsertLatest(ctx context.Context, rows []sink.StateRow) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	groups, err := latest.Prepare(rows, func(table string) (sink.StateSpec, bool) {
		st, ok := m.states[table]
		if !ok {
			return sink.StateSpec{}, false
		}
		return st.spec, true
	})
	if err != nil {
		return err
	}
	if err := m.injected(); err != nil {
		return err
	}
	for _, g := range groups {
		st := m.states[g[0].Table]
		for _, r := range g {
			k, _ := keyindex.Dedup(nil, r.Key)
			if old, ok := st.rows[k]; ok && r.ObservedAt.Before(old.ObservedAt) {
				continue
			}
			st.rows[k] = sink.StateRow{Table: r.Table, Key: slices.Clone(r.Key), ObservedAt: r.ObservedAt, Values: slices.Clone(r.Values)}
		}
		m.upserts = append(m.upserts, Upsert{Table: g[0].Table, Rows: g})
	}
	return nil
}

// ClosedThrough implements [sink.ProgressReader]: partitions that have closed nothing are
// left out.
func (m *Memory) ClosedThrough(ctx context.Context, tps ...sink.TopicPartition) (map[sink.TopicPartition]time.Time, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[sink.TopicPartition]time.Time, len(tps))
	for _, tp := range tps {
		if p, ok := m.progress[tp]; ok && !p.ClosedThrough.IsZero() {
			out[tp] = p.ClosedThrough
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
	t, ok := fold.Through(maps.Values(m.progress), func(topic string) bool { return slices.Contains(topics, topic) })
	switch {
	case !ok:
		return time.Time{}, true, nil
	case t.Equal(fold.EndOfTime):
		return time.Time{}, false, nil
	}
	return t, true, nil
}

// Aggregate implements [sink.Reader].
func (m *Memory) Aggregate(ctx context.Context, k sink.Key) (sink.Aggregate, bool, error) {
	if err := ctx.Err(); err != nil {
		return sink.Aggregate{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k.WindowStart = sink.AtPrecision(k.WindowStart)
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
		if k.WindowStart.Equal(sink.AtPrecision(windowStart)) {
			out = append(out, m.withComplete(a))
		}
	}
	slices.SortFunc(out, func(a, b sink.Aggregate) int { return merge.CompareKeys(a.Key, b.Key) })
	return out, nil
}

func (m *Memory) withComplete(a sink.Aggregate) sink.Aggregate {
	through, ok := fold.Through(maps.Values(m.progress), func(topic string) bool { return m.topics[topic] })
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
	k, _ := keyindex.Dedup(nil, key)
	r, ok := st.rows[k]
	if !ok {
		return sink.StateRow{}, false, nil
	}
	return sink.StateRow{Table: table, Key: slices.Clone(r.Key), ObservedAt: r.ObservedAt, Values: slices.Clone(r.Values)}, true, nil
}

var (
	_ sink.Sink              = (*Memory)(nil)
	_ sink.Reader            = (*Memory)(nil)
	_ sink.GatedWindowWriter = (*Memory)(nil)
	_ sink.TableDescriber    = (*Memory)(nil)
)

// Tables implements [sink.TableDescriber]: it returns the specs of the tables Memory
// writes, defaults filled in, the state tables ordered by name.
func (m *Memory) Tables() (sink.AggregateSpec, []sink.StateSpec) {
	out := make([]sink.StateSpec, 0, len(m.states))
	for _, st := range m.states {
		out = append(out, st.spec)
	}
	slices.SortFunc(out, func(a, b sink.StateSpec) int { return strings.Compare(a.Table, b.Table) })
	return m.agg, out
}
