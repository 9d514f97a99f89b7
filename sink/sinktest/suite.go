package sinktest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/window"
)

// Subject is what the suite tests: a sink that can read back what it stored.
type Subject interface {
	sink.Sink
	sink.Reader
}

// Setup is what the suite asks a [Factory] to build: an empty sink with these specs and
// clock.
type Setup struct {
	Aggregates sink.AggregateSpec
	States     []sink.StateSpec
	Clock      func() time.Time
}

// Factory returns a new, empty subject configured by s. It is called once or more per
// test; whatever it opens must be released by t.Cleanup.
type Factory func(t *testing.T, s Setup) Subject

// Features declares what an implementation supports; the suite skips what it does not.
type Features struct {
	// ConcurrentWriters: several goroutines (and, for a database, connections) may write
	// through one subject at once.
	ConcurrentWriters bool
	// Rounds is how many times the concurrency test is repeated [3]; it is cut to one
	// under -short.
	Rounds int
}

// Suite constants: the OV example's tables, so that the suite also proves that mapping.
const (
	AggregatesTable = "delay_aggregates"
	StateTable      = "vehicle_latest"
	Topic           = "arrivals"
)

// T0 returns the start of the first window the suite writes: 5-minute windows from it.
func T0() time.Time { return time.Date(2026, 3, 2, 7, 0, 0, 0, time.UTC) }

// Now() returns the suite's fixed clock reading.
func Now() time.Time { return time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC) }

const windowSize = 5 * time.Minute

// DelayAggregates is the seed's delay_aggregates mapping: its exact columns, with operator
// as the key's optional attribute.
func DelayAggregates() sink.AggregateSpec {
	return sink.AggregateSpec{
		Table: AggregatesTable,
		Columns: sink.AggregateColumns{
			WindowStart: "window_start", WindowEnd: "window_end", Dimension: "dimension", DimensionID: "dimension_id",
			Count: "event_count", Mean: "mean_delay_s", Quantile: "p90_delay_s", Max: "max_delay_s", Min: "min_delay_s",
			ComputedAt: "computed_at",
		},
		Attributes: []string{"operator"},
		Quantile:   0.9,
	}
}

// VehicleLatest is a last-write-wins table shaped like the seed's vehicle_latest.
func VehicleLatest() sink.StateSpec {
	return sink.StateSpec{
		Table:      StateTable,
		Key:        []sink.Column{{Name: "vehicle_id", Type: "text"}},
		ObservedAt: sink.Column{Name: "observed_at", Type: "timestamptz"},
		Values: []sink.Column{
			{Name: "trip_id", Type: "text"},
			{Name: "delay_s", Type: "double precision"},
			{Name: "stop_seq", Type: "bigint"},
		},
		UpdatedAt: "updated_at",
	}
}

// DefaultSetup is the setup every suite test uses.
func DefaultSetup() Setup {
	return Setup{
		Aggregates: DelayAggregates(),
		States:     []sink.StateSpec{VehicleLatest()},
		Clock:      Now,
	}
}

// Stats serializes a window.Stats holding values, as a processor's closed partial would.
func Stats(t testing.TB, values ...float64) []byte {
	t.Helper()
	s := window.NewStats()
	for _, v := range values {
		require.NoError(t, s.Add(v))
	}
	b, err := s.MarshalBinary()
	require.NoError(t, err)
	return b
}

// SeedValues returns ten delays whose count, mean and P90 (window's exact quantile, linear
// interpolation between closest ranks) are the seed's (10, 144.0, 300.0): the sorted values
// put ranks 8 and 9 (0-based; h = 0.9 * 9 = 8.1) both at 300, and the sum is 1440.
func SeedValues() []float64 { return []float64{60, 90, 300, 60, 90, 300, 60, 90, 300, 90} }

// Run runs the conformance suite against the subjects f builds.
func Run(t *testing.T, f Factory, feat Features) {
	if feat.Rounds <= 0 {
		feat.Rounds = 3
	}
	if testing.Short() {
		feat.Rounds = 1
	}
	tests := []struct {
		name string
		run  func(t *testing.T, f Factory, feat Features)
	}{
		{"SeedDuplicateWindowIsOneRow", testSeedDuplicate},
		{"PartialRewriteReplaces", testPartialRewriteReplaces},
		{"MergeAcrossPartitions", testMergeAcrossPartitions},
		{"DuplicateAndReorderedBatches", testDuplicateAndReordered},
		{"MergeDeterminism", testMergeDeterminism},
		{"ConcurrentWriters", testConcurrentWriters},
		{"Progress", testProgress},
		{"Readiness", testReadiness},
		{"Attributes", testAttributes},
		{"LatestGuard", testLatestGuard},
		{"LatestReorderedBatches", testLatestReordered},
		{"LatestConcurrentWriters", testLatestConcurrent},
		{"InvalidInputWritesNothing", testInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, f, feat) })
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func tp(p int32) sink.TopicPartition { return sink.TopicPartition{Topic: Topic, Partition: p} }

func win(i int) (start, end time.Time) {
	start = T0().Add(time.Duration(i) * windowSize)
	return start, start.Add(windowSize)
}

func partial(t testing.TB, w int, dim, id string, values ...float64) sink.Partial {
	start, end := win(w)
	return sink.Partial{Key: sink.Key{WindowStart: start, Dimension: dim, DimensionID: id}, WindowEnd: end, Stats: Stats(t, values...)}
}

func testSeedDuplicate(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	s := f(t, DefaultSetup())
	_, end := win(0)
	b := sink.CloseBatch{Source: tp(0), ClosedThrough: end, Partials: []sink.Partial{partial(t, 0, "line", "GVB:17", SeedValues()...)}}
	require.NoError(t, s.WriteClose(ctx, b))
	require.NoError(t, s.WriteClose(ctx, b), "the same finalized window delivered again")
	rows, err := s.Aggregates(ctx, T0())
	require.NoError(t, err)
	require.Len(t, rows, 1, "one row, not two")
	got := rows[0]
	assert.Equal(t, [3]float64{10, 144, 300}, [3]float64{float64(got.Count), got.Mean, got.Quantile}, "count 10, not 20")
	assert.Equal(t, 300.0, got.Max)
	assert.Equal(t, 60.0, got.Min)
	assert.Equal(t, end, got.WindowEnd)
	assert.Equal(t, Now(), got.ComputedAt, "computed_at comes from the injected clock")
}

func testPartialRewriteReplaces(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	s := f(t, DefaultSetup())
	_, end := win(0)
	first := sink.CloseBatch{Source: tp(0), ClosedThrough: end, Partials: []sink.Partial{partial(t, 0, "line", "1", 1, 2, 3)}}
	second := sink.CloseBatch{Source: tp(0), ClosedThrough: end, Partials: []sink.Partial{partial(t, 0, "line", "1", 10, 20)}}
	require.NoError(t, s.WriteClose(ctx, first))
	require.NoError(t, s.WriteClose(ctx, second))
	got, ok, err := s.Aggregate(ctx, second.Partials[0].Key)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, sink.Summary{Count: 2, Mean: 15, Quantile: 19, Max: 20, Min: 10}, got.Summary,
		"a partition's rewritten partial replaces its old one; it never adds to it")

	// Two partials with the same key in one batch: the later one is the partial.
	dup := sink.CloseBatch{Source: tp(0), ClosedThrough: end, Partials: []sink.Partial{partial(t, 0, "line", "2", 1), partial(t, 0, "line", "2", 7, 9)}}
	require.NoError(t, s.WriteClose(ctx, dup))
	got, ok, err = s.Aggregate(ctx, dup.Partials[0].Key)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, int64(2), got.Count)
	assert.Equal(t, 8.0, got.Mean)
}

func testMergeAcrossPartitions(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	s := f(t, DefaultSetup())
	_, end := win(0)
	values := map[int32][]float64{0: {5, 1, 9}, 1: {2, 8}, 2: {7, 3, 3, 4}}
	var all []float64
	for p := int32(2); p >= 0; p-- { // written out of partition order on purpose
		all = append(all, values[p]...)
		b := sink.CloseBatch{Source: tp(p), ClosedThrough: end, Partials: []sink.Partial{
			partial(t, 0, "line", "A", values[p]...),
			partial(t, 0, "stop", "S", values[p][0]),
		}}
		require.NoError(t, s.WriteClose(ctx, b))
	}
	slices.Sort(all)
	got, ok, err := s.Aggregate(ctx, sink.Key{WindowStart: T0(), Dimension: "line", DimensionID: "A"})
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, int64(len(all)), got.Count)
	assert.Equal(t, 1.0, got.Min)
	assert.Equal(t, 9.0, got.Max)
	assert.InDelta(t, 42.0/9, got.Mean, 1e-12)
	assert.Equal(t, window.ExactQuantile(all, 0.9), got.Quantile, "the quantile of all the partitions' values")
	got, ok, err = s.Aggregate(ctx, sink.Key{WindowStart: T0(), Dimension: "stop", DimensionID: "S"})
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, sink.Summary{Count: 3, Mean: 14.0 / 3, Quantile: window.ExactQuantile([]float64{2, 5, 7}, 0.9), Max: 7, Min: 2}, got.Summary)
}

// scenario is a deterministic set of close batches: partitions x windows, several keys.
func scenario(t testing.TB, seed uint64, partitions, windows, keys, maxValues int) [][]sink.CloseBatch {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([][]sink.CloseBatch, partitions)
	for p := range partitions {
		for w := range windows {
			_, end := win(w)
			b := sink.CloseBatch{Source: tp(int32(p)), ClosedThrough: end}
			for k := range keys {
				if r.IntN(4) == 0 {
					continue // not every partition sees every key
				}
				n := 1 + r.IntN(maxValues)
				vals := make([]float64, n)
				for i := range vals {
					vals[i] = float64(r.IntN(6000)-600) / 10
				}
				pa := partial(t, w, "line", fmt.Sprintf("L%03d", k), vals...)
				if k%3 == 0 {
					pa.Attrs = map[string]string{"operator": fmt.Sprintf("OP%d", k%5)}
				}
				b.Partials = append(b.Partials, pa)
			}
			out[p] = append(out[p], b)
		}
	}
	return out
}

// readAll returns every merged row of the first windows windows.
func readAll(t *testing.T, ctx context.Context, s Subject, windows int) []sink.Aggregate {
	var out []sink.Aggregate
	for w := range windows {
		start, _ := win(w)
		rows, err := s.Aggregates(ctx, start)
		require.NoError(t, err)
		out = append(out, rows...)
	}
	return out
}

func writeInOrder(t *testing.T, ctx context.Context, s Subject, batches [][]sink.CloseBatch) {
	for _, bs := range batches {
		for _, b := range bs {
			require.NoError(t, s.WriteClose(ctx, b))
		}
	}
}

func testDuplicateAndReordered(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	const partitions, windows = 3, 2
	batches := scenario(t, 7, partitions, windows, 12, 20)
	want := f(t, DefaultSetup())
	writeInOrder(t, ctx, want, batches)
	wantRows := readAll(t, ctx, want, windows)
	require.NotEmpty(t, wantRows)

	got := f(t, DefaultSetup())
	// Partitions interleaved in another order, and every batch delivered twice, the
	// duplicate after later batches of other partitions (a redelivery after a restart).
	r := rand.New(rand.NewPCG(99, 2))
	var flat []sink.CloseBatch
	for _, bs := range batches {
		flat = append(flat, bs...)
	}
	order := append(r.Perm(len(flat)), r.Perm(len(flat))...)
	for _, i := range order {
		require.NoError(t, got.WriteClose(ctx, flat[i]))
	}
	assert.Equal(t, wantRows, readAll(t, ctx, got, windows),
		"duplicates and reordering across partitions leave the same merged rows")
}

func testMergeDeterminism(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	const partitions, windows = 4, 1
	// Up to 400 values per partial: many keys go past window.ExactLimit into digest mode.
	batches := scenario(t, 11, partitions, windows, 8, 400)
	var results [][]sink.Aggregate
	for _, perm := range [][]int{{0, 1, 2, 3}, {3, 2, 1, 0}, {2, 0, 3, 1}} {
		s := f(t, DefaultSetup())
		for _, p := range perm {
			writeInOrder(t, ctx, s, batches[p:p+1])
		}
		results = append(results, readAll(t, ctx, s, windows))
	}
	for i := 1; i < len(results); i++ {
		require.Equal(t, results[0], results[i], "the merged rows do not depend on the order the partitions wrote in")
	}
	// And they are window.Merge of the stored partials in (topic, partition) order.
	for _, row := range results[0] {
		var parts [][]byte
		for p := range partitions {
			for _, pa := range batches[p][0].Partials {
				if pa.Key == row.Key {
					parts = append(parts, pa.Stats)
				}
			}
		}
		want, err := sink.Merge(0.9, parts...)
		require.NoError(t, err)
		assert.Equal(t, want, row.Summary, "%s/%s", row.Dimension, row.DimensionID)
	}
}

func testConcurrentWriters(t *testing.T, f Factory, feat Features) {
	if !feat.ConcurrentWriters {
		t.Skip("the implementation does not declare concurrent writers")
	}
	ctx := ctxT(t)
	const partitions, windows = 4, 3
	for round := range feat.Rounds {
		batches := scenario(t, uint64(100+round), partitions, windows, 40, 30)
		single := f(t, DefaultSetup())
		writeInOrder(t, ctx, single, batches)
		want := readAll(t, ctx, single, windows)

		s := f(t, DefaultSetup())
		var wg sync.WaitGroup
		errs := make([]error, partitions)
		for p := range partitions {
			wg.Go(func() {
				for _, b := range batches[p] {
					if err := s.WriteClose(ctx, b); err != nil {
						errs[p] = err
						return
					}
				}
			})
		}
		wg.Wait()
		require.NoError(t, errors.Join(errs...))
		require.Equal(t, want, readAll(t, ctx, s, windows),
			"round %d: concurrent writers of different partitions give the single writer's rows", round)
	}
}

func testProgress(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	s := f(t, DefaultSetup())
	got, err := s.ClosedThrough(ctx, tp(0), tp(1))
	require.NoError(t, err)
	assert.Empty(t, got, "no partition wrote yet")

	_, end0 := win(0)
	_, end2 := win(2)
	require.NoError(t, s.WriteClose(ctx, sink.CloseBatch{Source: tp(0), ClosedThrough: end2, Partials: []sink.Partial{partial(t, 0, "line", "1", 1)}}))
	require.NoError(t, s.WriteClose(ctx, sink.CloseBatch{Source: tp(1), ClosedThrough: end0}), "a batch without partials records progress")
	require.NoError(t, s.WriteClose(ctx, sink.CloseBatch{Source: tp(0), ClosedThrough: end0}), "an older closed_through")
	got, err = s.ClosedThrough(ctx, tp(0), tp(1), tp(2), sink.TopicPartition{Topic: "other", Partition: 0})
	require.NoError(t, err)
	assert.Equal(t, map[sink.TopicPartition]time.Time{tp(0): end2, tp(1): end0}, got, "progress never goes back")
}

func testReadiness(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	s := f(t, DefaultSetup())
	_, end0 := win(0)
	_, end1 := win(1)
	// Both partitions of the topic are registered when assigned, before any window closes.
	for p := range int32(2) {
		require.NoError(t, s.WriteClose(ctx, sink.CloseBatch{Source: tp(p)}))
	}
	_, ok, err := s.CompleteThrough(ctx, "nobody")
	require.NoError(t, err)
	assert.False(t, ok, "no partition of an unknown topic")

	require.NoError(t, s.WriteClose(ctx, sink.CloseBatch{Source: tp(0), ClosedThrough: end1, Partials: []sink.Partial{partial(t, 0, "line", "1", 4)}}))
	row, ok, err := s.Aggregate(ctx, sink.Key{WindowStart: T0(), Dimension: "line", DimensionID: "1"})
	require.NoError(t, err)
	require.True(t, ok)
	assert.False(t, row.Complete, "partition 1 has not closed the window: the row is still filling")
	through, ok, err := s.CompleteThrough(ctx, Topic)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.True(t, through.Before(end0))

	require.NoError(t, s.WriteClose(ctx, sink.CloseBatch{Source: tp(1), ClosedThrough: end0}))
	row, _, err = s.Aggregate(ctx, row.Key)
	require.NoError(t, err)
	assert.True(t, row.Complete, "every partition closed through the window end")
	through, ok, err = s.CompleteThrough(ctx, Topic)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, end0, through)

	// A partition of another topic that feeds nothing does not hold the row back.
	require.NoError(t, s.WriteClose(ctx, sink.CloseBatch{Source: sink.TopicPartition{Topic: "positions", Partition: 0}}))
	row, _, err = s.Aggregate(ctx, row.Key)
	require.NoError(t, err)
	assert.True(t, row.Complete)
}

func testAttributes(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	s := f(t, DefaultSetup())
	_, end := win(0)
	key := sink.Key{WindowStart: T0(), Dimension: "line", DimensionID: "17"}
	write := func(p int32, attrs map[string]string, v float64) sink.Aggregate {
		t.Helper()
		pa := partial(t, 0, "line", "17", v)
		pa.Attrs = attrs
		require.NoError(t, s.WriteClose(ctx, sink.CloseBatch{Source: tp(p), ClosedThrough: end, Partials: []sink.Partial{pa}}))
		row, ok, err := s.Aggregate(ctx, key)
		require.NoError(t, err)
		require.True(t, ok)
		return row
	}
	assert.Nil(t, write(1, nil, 1).Attrs, "no partial carried an operator yet")
	assert.Equal(t, map[string]string{"operator": "RET"}, write(1, map[string]string{"operator": "RET"}, 1).Attrs)
	assert.Equal(t, map[string]string{"operator": "GVB"}, write(0, map[string]string{"operator": "GVB"}, 2).Attrs,
		"the first operator in (topic, partition) order")
	assert.Equal(t, map[string]string{"operator": "GVB"}, write(0, nil, 2).Attrs,
		"a rewrite without the attribute keeps the stored one (COALESCE)")
	row := write(2, nil, 3)
	assert.Equal(t, map[string]string{"operator": "GVB"}, row.Attrs)
	assert.Equal(t, int64(3), row.Count)
}

func stateRow(id string, at time.Time, trip string, delay float64, seq int64) sink.StateRow {
	return sink.StateRow{Key: []any{id}, ObservedAt: at, Values: []any{trip, delay, seq}}
}

func testLatestGuard(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	s := f(t, DefaultSetup())
	at := T0().Add(30 * time.Second)
	latest := func(id string) sink.StateRow {
		t.Helper()
		r, ok, err := s.Latest(ctx, StateTable, id)
		require.NoError(t, err)
		require.True(t, ok, id)
		return r
	}
	require.NoError(t, s.UpsertLatest(ctx, StateTable, []sink.StateRow{stateRow("bus-1", at, "t1", 12.5, 3)}))
	assert.Equal(t, stateRow("bus-1", at, "t1", 12.5, 3), latest("bus-1"))

	require.NoError(t, s.UpsertLatest(ctx, StateTable, []sink.StateRow{stateRow("bus-1", at.Add(-time.Second), "old", 0, 1)}))
	assert.Equal(t, stateRow("bus-1", at, "t1", 12.5, 3), latest("bus-1"), "an older row never replaces a newer one")

	require.NoError(t, s.UpsertLatest(ctx, StateTable, []sink.StateRow{stateRow("bus-1", at, "same-time", 1, 4)}))
	assert.Equal(t, stateRow("bus-1", at, "same-time", 1, 4), latest("bus-1"), "the guard is >=: an equal time replaces")

	// One batch holding a newer and then an older row for the same key: the newer stays.
	later := at.Add(time.Minute)
	require.NoError(t, s.UpsertLatest(ctx, StateTable, []sink.StateRow{
		stateRow("bus-1", later, "new", 2, 5),
		stateRow("bus-2", later, "x", 3, 1),
		stateRow("bus-1", at.Add(30*time.Second), "stale", 9, 9),
	}))
	assert.Equal(t, stateRow("bus-1", later, "new", 2, 5), latest("bus-1"))
	assert.Equal(t, stateRow("bus-2", later, "x", 3, 1), latest("bus-2"))

	_, ok, err := s.Latest(ctx, StateTable, "bus-9")
	require.NoError(t, err)
	assert.False(t, ok)
	require.NoError(t, s.UpsertLatest(ctx, StateTable, nil), "an empty batch is a no-op")
}

func testLatestReordered(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	r := rand.New(rand.NewPCG(5, 5))
	var rows []sink.StateRow
	want := map[string]sink.StateRow{}
	for v := range 20 {
		id := fmt.Sprintf("veh-%02d", v)
		for i := range 10 {
			row := stateRow(id, T0().Add(time.Duration(r.IntN(100000))*time.Second+time.Duration(i)), fmt.Sprintf("trip-%d", i), float64(r.IntN(600)), int64(i))
			row.ObservedAt = row.ObservedAt.Truncate(time.Second).Add(time.Duration(i) * time.Hour * 24 * 30)
			rows = append(rows, row)
			if w, ok := want[id]; !ok || row.ObservedAt.After(w.ObservedAt) {
				want[id] = row
			}
		}
	}
	for round := range 2 {
		s := f(t, DefaultSetup())
		perm := r.Perm(len(rows))
		for i := 0; i < len(perm); i += 17 {
			var batch []sink.StateRow
			for _, j := range perm[i:min(i+17, len(perm))] {
				batch = append(batch, rows[j])
			}
			require.NoError(t, s.UpsertLatest(ctx, StateTable, batch))
		}
		// A redelivery of everything, in one batch, in reverse.
		rev := slices.Clone(rows)
		slices.Reverse(rev)
		require.NoError(t, s.UpsertLatest(ctx, StateTable, rev))
		for id, w := range want {
			got, ok, err := s.Latest(ctx, StateTable, id)
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, w, got, "round %d: %s", round, id)
		}
	}
}

func testLatestConcurrent(t *testing.T, f Factory, feat Features) {
	if !feat.ConcurrentWriters {
		t.Skip("the implementation does not declare concurrent writers")
	}
	ctx := ctxT(t)
	s := f(t, DefaultSetup())
	const writers, vehicles, rounds = 4, 50, 20
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for w := range writers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 9))
			for round := range rounds {
				// Every writer touches every vehicle, in its own order, so row locks are
				// requested in conflicting orders unless the sink orders them.
				batch := make([]sink.StateRow, 0, vehicles)
				for _, v := range r.Perm(vehicles) {
					at := T0().Add(time.Duration(round*writers+w) * time.Second)
					batch = append(batch, stateRow(fmt.Sprintf("veh-%02d", v), at, fmt.Sprintf("w%d", w), float64(round), int64(round*writers+w)))
				}
				if err := s.UpsertLatest(ctx, StateTable, batch); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	last := (rounds-1)*writers + writers - 1
	for v := range vehicles {
		id := fmt.Sprintf("veh-%02d", v)
		got, ok, err := s.Latest(ctx, StateTable, id)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, stateRow(id, T0().Add(time.Duration(last)*time.Second), fmt.Sprintf("w%d", writers-1), float64(rounds-1), int64(last)), got)
	}
}

func testInvalid(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	s := f(t, DefaultSetup())
	start, end := win(0)
	good := partial(t, 0, "line", "1", 1)
	cases := map[string]sink.CloseBatch{
		"no topic":                 {Source: sink.TopicPartition{Partition: 0}, ClosedThrough: end, Partials: []sink.Partial{good}},
		"negative partition":       {Source: sink.TopicPartition{Topic: Topic, Partition: -1}, ClosedThrough: end, Partials: []sink.Partial{good}},
		"end after closed_through": {Source: tp(0), ClosedThrough: start, Partials: []sink.Partial{good}},
		"garbled stats":            {Source: tp(0), ClosedThrough: end, Partials: []sink.Partial{{Key: good.Key, WindowEnd: end, Stats: []byte{0xff, 1, 2}}}},
		"empty stats":              {Source: tp(0), ClosedThrough: end, Partials: []sink.Partial{{Key: good.Key, WindowEnd: end, Stats: Stats(t)}}},
		"end before start":         {Source: tp(0), ClosedThrough: end, Partials: []sink.Partial{{Key: good.Key, WindowEnd: start, Stats: good.Stats}}},
		"undeclared attribute":     {Source: tp(0), ClosedThrough: end, Partials: []sink.Partial{{Key: good.Key, WindowEnd: end, Stats: good.Stats, Attrs: map[string]string{"colour": "red"}}}},
		"valid partial then bad":   {Source: tp(0), ClosedThrough: end, Partials: []sink.Partial{good, {Key: sink.Key{WindowStart: start, Dimension: "x"}, WindowEnd: end}}},
	}
	for name, b := range cases {
		assert.ErrorIs(t, s.WriteClose(ctx, b), sink.ErrInvalid, name)
	}
	rows, err := s.Aggregates(ctx, start)
	require.NoError(t, err)
	assert.Empty(t, rows, "an invalid batch writes nothing")
	progress, err := s.ClosedThrough(ctx, tp(0), tp(-1))
	require.NoError(t, err)
	assert.Empty(t, progress)

	at := T0()
	for name, rows := range map[string][]sink.StateRow{
		"short key":      {{Key: nil, ObservedAt: at, Values: []any{"t", 1.0, int64(1)}}},
		"short values":   {{Key: []any{"v"}, ObservedAt: at, Values: []any{"t"}}},
		"no observed_at": {{Key: []any{"v"}, Values: []any{"t", 1.0, int64(1)}}},
	} {
		assert.ErrorIs(t, s.UpsertLatest(ctx, StateTable, rows), sink.ErrInvalid, name)
	}
	assert.ErrorIs(t, s.UpsertLatest(ctx, "no_such_table", []sink.StateRow{stateRow("v", at, "t", 1, 1)}), sink.ErrInvalid)
	_, ok, err := s.Latest(ctx, StateTable, "v")
	require.NoError(t, err)
	assert.False(t, ok)
}
