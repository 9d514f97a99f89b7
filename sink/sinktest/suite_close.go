package sinktest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/quantile"
	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/merge"
)

// register registers the partitions in one call, as a consumer does at assignment.
func register(t *testing.T, ctx context.Context, s Subject, tps ...sink.TopicPartition) {
	t.Helper()
	bs := make([]sink.CloseBatch, len(tps))
	for i, p := range tps {
		bs[i] = sink.CloseBatch{Source: p}
	}
	require.NoError(t, s.WriteClose(ctx, bs...))
}

func tps(n int) []sink.TopicPartition {
	out := make([]sink.TopicPartition, n)
	for i := range out {
		out[i] = tp(int32(i))
	}
	return out
}

func closeOf(p int32, through time.Time, ps ...sink.Partial) sink.CloseBatch {
	return sink.CloseBatch{Source: tp(p), ClosedThrough: through, Partials: ps}
}

func rowsOf(t *testing.T, ctx context.Context, s Subject, w int) []sink.Aggregate {
	t.Helper()
	start, _ := win(w)
	rows, err := s.Aggregates(ctx, start)
	require.NoError(t, err)
	return rows
}

func aggregate(t *testing.T, ctx context.Context, s Subject, k sink.Key) (sink.Aggregate, bool) {
	t.Helper()
	a, ok, err := s.Aggregate(ctx, k)
	require.NoError(t, err)
	return a, ok
}

func keyOf(w int, dim, id string) sink.Key {
	start, _ := win(w)
	return sink.Key{WindowStart: start, Dimension: dim, DimensionID: id}
}

func testDuplicateWindow(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	s := f(t, defaultSetup())
	_, end := win(0)
	b := closeOf(0, end, partial(t, 0, "line", "17", sinkfixture.KnownValues()...))
	require.NoError(t, s.WriteClose(ctx, b))
	require.NoError(t, s.WriteClose(ctx, b), "the same finalized window delivered again")
	rows := rowsOf(t, ctx, s, 0)
	require.Len(t, rows, 1, "one row, not two")
	got := rows[0]
	assert.Equal(t, [3]float64{10, 144, 300}, [3]float64{float64(got.Count), got.Mean, got.Quantile}, "count 10, not 20")
	assert.Equal(t, 300.0, got.Max)
	assert.Equal(t, 60.0, got.Min)
	assert.Equal(t, end, got.WindowEnd)
	assert.Equal(t, sinkfixture.Now(), got.ComputedAt, "computed_at comes from the injected clock")
	assert.True(t, got.Complete)
}

func testRegistrationHolds(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	s := f(t, defaultSetup())
	register(t, ctx, s, tps(2)...)
	_, end := win(0)
	require.NoError(t, s.WriteClose(ctx, closeOf(0, end, partial(t, 0, "line", "1", 4))))
	assert.Empty(t, rowsOf(t, ctx, s, 0), "partition 1 is registered and has closed nothing: the window is not complete")
	got, err := s.ClosedThrough(ctx, tp(0), tp(1))
	require.NoError(t, err)
	assert.Equal(t, map[sink.TopicPartition]time.Time{tp(0): end}, got, "a registered partition without progress has no closed_through")

	register(t, ctx, s, tp(0), tp(1)) // registering again moves nothing
	require.NoError(t, s.WriteClose(ctx, closeOf(1, end, partial(t, 0, "line", "1", 6))))
	rows := rowsOf(t, ctx, s, 0)
	require.Len(t, rows, 1)
	assert.Equal(t, sink.Summary{Count: 2, Mean: 5, Quantile: quantile.Linear([]float64{4, 6}, 0.9), Max: 6, Min: 4}, rows[0].Summary)
	got, err = s.ClosedThrough(ctx, tp(0), tp(1))
	require.NoError(t, err)
	assert.Equal(t, map[sink.TopicPartition]time.Time{tp(0): end, tp(1): end}, got)
}

func testEmptyReleases(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	s := f(t, defaultSetup())
	register(t, ctx, s, tps(2)...)
	_, end0 := win(0)
	_, end1 := win(1)
	require.NoError(t, s.WriteClose(ctx, closeOf(0, end1, partial(t, 0, "line", "1", 4), partial(t, 1, "line", "1", 5))))
	assert.Empty(t, rowsOf(t, ctx, s, 0))

	// A call that carries no partial of the window completes it from the stored partials.
	require.NoError(t, s.WriteClose(ctx, sink.CloseBatch{Source: tp(1), Empty: true}))
	for w := range 2 {
		rows := rowsOf(t, ctx, s, w)
		require.Len(t, rows, 1, "window %d: an empty partition holds nothing back", w)
		assert.True(t, rows[0].Complete)
	}
	got, err := s.ClosedThrough(ctx, tp(1))
	require.NoError(t, err)
	assert.Empty(t, got, "Empty records no closed_through")

	// A ClosedThrough clears the flag: partition 1 holds later windows again.
	require.NoError(t, s.WriteClose(ctx, closeOf(1, end0)))
	_, end2 := win(2)
	require.NoError(t, s.WriteClose(ctx, closeOf(0, end2, partial(t, 2, "line", "1", 7))))
	assert.Empty(t, rowsOf(t, ctx, s, 2), "partition 1 is at window 0's end again")
	require.NoError(t, s.WriteClose(ctx, closeOf(1, end2)))
	assert.Len(t, rowsOf(t, ctx, s, 2), 1)
}

func testNonContributingTopic(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	s := f(t, defaultSetup())
	positions := sink.TopicPartition{Topic: "positions", Partition: 0}
	register(t, ctx, s, tp(0), positions)
	_, end := win(0)
	require.NoError(t, s.WriteClose(ctx, closeOf(0, end, partial(t, 0, "line", "1", 4))))
	rows := rowsOf(t, ctx, s, 0)
	require.Len(t, rows, 1, "a partition of a topic that never wrote a partial holds nothing back")
	assert.True(t, rows[0].Complete)
	through, ok, err := s.CompleteThrough(ctx, sinkfixture.Topic)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, end, through)
	through, ok, err = s.CompleteThrough(ctx, "positions")
	require.NoError(t, err)
	assert.True(t, ok, "positions/0 is registered")
	assert.True(t, through.IsZero(), "and has closed nothing")
}

func testCompleteOnly(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	s := f(t, defaultSetup())
	register(t, ctx, s, tps(2)...)
	_, end0 := win(0)
	_, end2 := win(2)
	var p0, p1 []sink.Partial
	for w := range 3 {
		p0 = append(p0, partial(t, w, "line", "1", float64(w)))
		p1 = append(p1, partial(t, w, "stop", "S", float64(w)))
	}
	require.NoError(t, s.WriteClose(ctx, closeOf(0, end2, p0...), closeOf(1, end0, p1[0])))
	assert.Len(t, rowsOf(t, ctx, s, 0), 2, "window 0 is complete: both keys")
	assert.Empty(t, rowsOf(t, ctx, s, 1), "partition 1 has not closed window 1")
	assert.Empty(t, rowsOf(t, ctx, s, 2))
	require.NoError(t, s.WriteClose(ctx, closeOf(1, end2, p1[1:]...)))
	for w := 1; w < 3; w++ {
		assert.Len(t, rowsOf(t, ctx, s, w), 2, "window %d", w)
	}
}

func testPartialRewriteReplaces(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	s := f(t, defaultSetup())
	register(t, ctx, s, tps(2)...) // partition 1 keeps the window open
	_, end := win(0)
	require.NoError(t, s.WriteClose(ctx, closeOf(0, end, partial(t, 0, "line", "1", 1, 2, 3), partial(t, 0, "line", "kept", 5))))
	require.NoError(t, s.WriteClose(ctx, closeOf(0, end, partial(t, 0, "line", "1", 10, 20))))
	// Two partials with the same key in one batch: the later one is the partial.
	require.NoError(t, s.WriteClose(ctx, closeOf(0, end, partial(t, 0, "line", "2", 1), partial(t, 0, "line", "2", 7, 9))))
	require.NoError(t, s.WriteClose(ctx, closeOf(1, end)))

	got, ok := aggregate(t, ctx, s, keyOf(0, "line", "1"))
	require.True(t, ok)
	assert.Equal(t, sink.Summary{Count: 2, Mean: 15, Quantile: 19, Max: 20, Min: 10}, got.Summary,
		"a partition's rewritten partial replaces its old one; it never adds to it")
	got, ok = aggregate(t, ctx, s, keyOf(0, "line", "kept"))
	require.True(t, ok, "a rewrite replaces the keys it carries and keeps the others")
	assert.Equal(t, int64(1), got.Count)
	got, ok = aggregate(t, ctx, s, keyOf(0, "line", "2"))
	require.True(t, ok)
	assert.Equal(t, int64(2), got.Count)
	assert.Equal(t, 8.0, got.Mean)
}

func testMergeAcrossPartitions(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	s := f(t, defaultSetup())
	register(t, ctx, s, tps(3)...)
	_, end := win(0)
	values := map[int32][]float64{0: {5, 1, 9}, 1: {2, 8}, 2: {7, 3, 3, 4}}
	var all []float64
	for p := int32(2); p >= 0; p-- { // written out of partition order on purpose
		all = append(all, values[p]...)
		require.NoError(t, s.WriteClose(ctx, closeOf(p, end, partial(t, 0, "line", "A", values[p]...), partial(t, 0, "stop", "S", values[p][0]))))
	}
	slices.Sort(all)
	got, ok := aggregate(t, ctx, s, keyOf(0, "line", "A"))
	require.True(t, ok)
	assert.Equal(t, int64(len(all)), got.Count)
	assert.Equal(t, 1.0, got.Min)
	assert.Equal(t, 9.0, got.Max)
	assert.InDelta(t, 42.0/9, got.Mean, 1e-12)
	assert.Equal(t, quantile.Linear(all, 0.9), got.Quantile, "the quantile of all the partitions' values")
	got, ok = aggregate(t, ctx, s, keyOf(0, "stop", "S"))
	require.True(t, ok)
	assert.Equal(t, sink.Summary{Count: 3, Mean: 14.0 / 3, Quantile: quantile.Linear([]float64{2, 5, 7}, 0.9), Max: 7, Min: 2}, got.Summary)
}

// scenario is a deterministic set of close batches: partitions x windows, several keys.
func scenario(t testing.TB, seed uint64, partitions, windows, keys, maxValues int) [][]sink.CloseBatch {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([][]sink.CloseBatch, partitions)
	for p := range partitions {
		for w := range windows {
			_, end := win(w)
			b := closeOf(int32(p), end)
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
					pa.Attrs = map[string]string{"owner": fmt.Sprintf("OP%d", k%5)}
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
		out = append(out, rowsOf(t, ctx, s, w)...)
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

// checkCanonical asserts that every row is merge.Partials of the scenario's
// partials of its key in (topic, partition) order, and that every key of the scenario has a
// row.
func checkCanonical(t *testing.T, batches [][]sink.CloseBatch, rows []sink.Aggregate) {
	t.Helper()
	want := map[sink.Key][][]byte{}
	for _, bs := range batches {
		for _, b := range bs {
			for _, pa := range b.Partials {
				want[pa.Key] = append(want[pa.Key], pa.Stats)
			}
		}
	}
	require.Len(t, rows, len(want))
	for _, row := range rows {
		sum, err := merge.Partials(sinkfixture.Aggregates(), want[row.Key]...)
		require.NoError(t, err)
		assert.Equal(t, sum, row.Summary, "%s/%s", row.Dimension, row.DimensionID)
	}
}

// registered returns a new subject with partitions 0 to n-1 registered.
func registered(t *testing.T, ctx context.Context, f Factory, n int) Subject {
	s := f(t, defaultSetup())
	register(t, ctx, s, tps(n)...)
	return s
}

// singleWriter writes batches (per partition, per window) one by one, in order, into a
// registered subject, checks the rows against the canonical merge and returns them.
func singleWriter(t *testing.T, ctx context.Context, f Factory, batches [][]sink.CloseBatch) []sink.Aggregate {
	s := registered(t, ctx, f, len(batches))
	writeInOrder(t, ctx, s, batches)
	rows := readAll(t, ctx, s, len(batches[0]))
	checkCanonical(t, batches, rows)
	return rows
}

func testDuplicateAndReordered(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	const partitions, windows = 3, 2
	batches := scenario(t, 7, partitions, windows, 12, 20)
	wantRows := singleWriter(t, ctx, f, batches)
	got := registered(t, ctx, f, partitions)
	// Partitions interleaved at random (each partition's batches stay in order, as its
	// closed_through requires), then every batch delivered again in any order (a
	// redelivery after a restart).
	r := rand.New(rand.NewPCG(99, 2))
	var order []sink.CloseBatch
	next := make([]int, partitions)
	for len(order) < partitions*windows {
		p := r.IntN(partitions)
		if next[p] < windows {
			order = append(order, batches[p][next[p]])
			next[p]++
		}
	}
	for _, i := range r.Perm(len(order)) {
		order = append(order, order[i])
	}
	for _, b := range order {
		require.NoError(t, got.WriteClose(ctx, b))
	}
	assert.Equal(t, wantRows, readAll(t, ctx, got, windows),
		"duplicates and reordering across partitions leave the same merged rows")
}

func testMergeDeterminism(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	const partitions, windows = 4, 1
	// Up to 400 values per partial: many keys go past window.DefaultExactLimit into digest mode.
	batches := scenario(t, 11, partitions, windows, 8, 400)
	var results [][]sink.Aggregate
	for _, perm := range [][]int{{0, 1, 2, 3}, {3, 2, 1, 0}, {2, 0, 3, 1}} {
		s := f(t, defaultSetup())
		register(t, ctx, s, tps(partitions)...)
		for _, p := range perm {
			writeInOrder(t, ctx, s, batches[p:p+1])
		}
		results = append(results, readAll(t, ctx, s, windows))
	}
	for i := 1; i < len(results); i++ {
		require.Equal(t, results[0], results[i], "the merged rows do not depend on the order the partitions wrote in")
	}
	checkCanonical(t, batches, results[0])
}

func testRefold(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	s := f(t, defaultSetup())
	register(t, ctx, s, tps(2)...)
	_, end := win(0)
	a0, a1, a2 := []float64{1, 2, 3}, []float64{10}, []float64{4, 40}
	require.NoError(t, s.WriteClose(ctx, closeOf(0, end, partial(t, 0, "line", "A", a0...)), closeOf(1, end, partial(t, 0, "line", "A", a1...))))
	before, ok := aggregate(t, ctx, s, keyOf(0, "line", "A"))
	require.True(t, ok)
	require.Equal(t, int64(4), before.Count)

	// A partition added to the topic later closes the folded window with a partial of it,
	// and one of a key the window did not have.
	register(t, ctx, s, tp(2))
	require.NoError(t, s.WriteClose(ctx, closeOf(2, end, partial(t, 0, "line", "A", a2...), partial(t, 0, "line", "B", 7))))
	got, ok := aggregate(t, ctx, s, keyOf(0, "line", "A"))
	require.True(t, ok)
	want, err := merge.Partials(sinkfixture.Aggregates(), sinkfixture.Stats(t, a0...), sinkfixture.Stats(t, a1...), sinkfixture.Stats(t, a2...))
	require.NoError(t, err)
	assert.Equal(t, want, got.Summary, "the new partition is merged into the folded window")
	got, ok = aggregate(t, ctx, s, keyOf(0, "line", "B"))
	require.True(t, ok)
	assert.Equal(t, int64(1), got.Count)

	// Its replay is ignored like any other.
	require.NoError(t, s.WriteClose(ctx, closeOf(2, end, partial(t, 0, "line", "A", 99, 99))))
	got, _ = aggregate(t, ctx, s, keyOf(0, "line", "A"))
	assert.Equal(t, want, got.Summary)

	// A topic that starts contributing is merged in the same way.
	other := sink.TopicPartition{Topic: "z-other", Partition: 0}
	require.NoError(t, s.WriteClose(ctx, sink.CloseBatch{Source: other, ClosedThrough: end, Partials: []sink.Partial{partial(t, 0, "line", "A", 5)}}))
	got, _ = aggregate(t, ctx, s, keyOf(0, "line", "A"))
	assert.Equal(t, int64(7), got.Count)
}

func testReplayIgnored(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	s := f(t, defaultSetup())
	register(t, ctx, s, tps(2)...)
	_, end := win(0)
	first := []sink.CloseBatch{closeOf(0, end, partial(t, 0, "line", "1", 1, 2)), closeOf(1, end, partial(t, 0, "line", "1", 3))}
	require.NoError(t, s.WriteClose(ctx, first...))
	want := rowsOf(t, ctx, s, 0)
	require.Len(t, want, 1)
	// A replay of a final window, even with other stats or keys (a consumer that decided
	// differently would be a bug elsewhere), changes nothing.
	require.NoError(t, s.WriteClose(ctx, closeOf(0, end, partial(t, 0, "line", "1", 50), partial(t, 0, "line", "new", 1))))
	require.NoError(t, s.WriteClose(ctx, first...))
	assert.Equal(t, want, rowsOf(t, ctx, s, 0))
}

// clock is a settable clock for the horizon test.
type clock struct{ ns atomic.Int64 }

func (c *clock) Now() time.Time      { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) Set(t time.Time)     { c.ns.Store(t.UnixNano()) }
func newClock(t time.Time) *clock    { c := &clock{}; c.Set(t); return c }
func (c *clock) Add(d time.Duration) { c.ns.Add(int64(d)) }

func testHorizon(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	const horizon = time.Hour
	_, end0 := win(0)
	_, end1 := win(1)
	clk := newClock(end0)
	setup := defaultSetup()
	setup.Clock, setup.Horizon = clk.Now, horizon
	s := f(t, setup)
	register(t, ctx, s, tps(2)...)
	require.NoError(t, s.WriteClose(ctx, closeOf(0, end0, partial(t, 0, "line", "1", 1)), closeOf(1, end0, partial(t, 0, "line", "1", 2))))
	clk.Set(end1)
	require.NoError(t, s.WriteClose(ctx, closeOf(0, end1, partial(t, 1, "line", "1", 1)), closeOf(1, end1, partial(t, 1, "line", "1", 2))))

	// Window 0 was folded more than the horizon ago, window 1 not: a write prunes window
	// 0's folded row only.
	clk.Set(end0.Add(horizon + 2*time.Minute))
	require.NoError(t, s.WriteClose(ctx, closeOf(0, end1)))
	register(t, ctx, s, tp(2))
	require.NoError(t, s.WriteClose(ctx, closeOf(2, end1, partial(t, 0, "line", "1", 100), partial(t, 0, "line", "new", 3), partial(t, 1, "line", "1", 100))))

	rows := rowsOf(t, ctx, s, 0)
	require.Len(t, rows, 1, "past the horizon a window's merged rows are final: no new key")
	assert.Equal(t, int64(2), rows[0].Count, "and no new partial")
	assert.Equal(t, 2.0, rows[0].Max)
	rows = rowsOf(t, ctx, s, 1)
	require.Len(t, rows, 1)
	assert.Equal(t, int64(3), rows[0].Count, "within the horizon the later partition is merged in")
	assert.Equal(t, 100.0, rows[0].Max)

	// The horizon runs from the fold, not from the window's end: a replay of historical data
	// folds windows that ended long before the clock's now, and keeps them.
	clk = newClock(end0.Add(10 * 24 * time.Hour))
	setup.Clock = clk.Now
	s = f(t, setup)
	register(t, ctx, s, tps(2)...)
	require.NoError(t, s.WriteClose(ctx, closeOf(0, end0, partial(t, 0, "line", "1", 1)), closeOf(1, end0, partial(t, 0, "line", "1", 2))))
	clk.Add(2 * time.Minute)
	require.NoError(t, s.WriteClose(ctx, closeOf(0, end1)))
	register(t, ctx, s, tp(2))
	require.NoError(t, s.WriteClose(ctx, closeOf(2, end0, partial(t, 0, "line", "1", 100))))
	rows = rowsOf(t, ctx, s, 0)
	require.Len(t, rows, 1)
	assert.Equal(t, int64(3), rows[0].Count, "a window folded two minutes ago is within the horizon")
}

func testCallAtomic(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	s := f(t, defaultSetup())
	start, end := win(0)
	good := closeOf(0, end, partial(t, 0, "line", "1", 1))
	bad := closeOf(1, start, partial(t, 0, "line", "1", 2)) // ends after its closed_through
	assert.ErrorIs(t, s.WriteClose(ctx, good, bad), sink.ErrInvalid)
	assert.ErrorIs(t, s.WriteClose(ctx, good, closeOf(0, end)), sink.ErrInvalid, "a source twice in one call")
	assert.ErrorIs(t, s.WriteClose(ctx, sink.CloseBatch{Source: tp(1)}, good, sink.CloseBatch{Source: tp(1), Empty: true}), sink.ErrInvalid)
	got, err := s.ClosedThrough(ctx, tp(0), tp(1))
	require.NoError(t, err)
	assert.Empty(t, got, "an invalid batch writes nothing of its call")
	assert.Empty(t, rowsOf(t, ctx, s, 0))
	_, ok, err := s.CompleteThrough(ctx, sinkfixture.Topic)
	require.NoError(t, err)
	assert.False(t, ok, "not even the registration")

	// Registration and both partitions' closes in one call: the window folds at once.
	require.NoError(t, s.WriteClose(ctx, sink.CloseBatch{Source: tp(2)}, good, closeOf(1, end, partial(t, 0, "line", "1", 2))))
	assert.Empty(t, rowsOf(t, ctx, s, 0), "partition 2 holds the window")
	require.NoError(t, s.WriteClose(ctx, sink.CloseBatch{Source: tp(2), Empty: true}))
	rows := rowsOf(t, ctx, s, 0)
	require.Len(t, rows, 1)
	assert.Equal(t, int64(2), rows[0].Count)
}

// testGatedClose checks a sink.GatedWindowWriter: nothing of the call is visible while its
// gate runs, a refusal writes nothing and is not retried, a call the gate lets through is
// written, and a gate may write state through the same sink and read it back, as a
// consumer's gate waits for the state flushes of its tick.
func testGatedClose(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	s := f(t, defaultSetup())
	g, ok := s.(sink.GatedWindowWriter)
	if !ok {
		t.Skip("not a sink.GatedWindowWriter")
	}
	_, end := win(0)
	b := closeOf(0, end, partial(t, 0, "line", "1", 1))
	refusal := errors.New("refused by the test")
	calls := 0
	unseen := func(ctx context.Context) {
		got, err := s.ClosedThrough(ctx, tp(0))
		require.NoError(t, err)
		assert.Empty(t, got, "nothing of the call visible while its gate runs")
	}
	err := g.WriteCloseGated(ctx, func(ctx context.Context) error { calls++; unseen(ctx); return refusal }, b)
	require.ErrorIs(t, err, refusal)
	assert.Equal(t, 1, calls, "a refusal is not retried")
	unseen(ctx)

	require.NoError(t, g.WriteCloseGated(ctx, func(ctx context.Context) error { calls++; unseen(ctx); return nil }, b))
	assert.Equal(t, 2, calls)
	got, err := s.ClosedThrough(ctx, tp(0))
	require.NoError(t, err)
	assert.Equal(t, end, got[tp(0)])

	// A state write and a read under the gate: they must not wait for the gated write's lock,
	// or this call waits until its deadline.
	bounded, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	row := stateRow("gated", end, "under the gate", 1, 1)
	_, later := win(1)
	err = g.WriteCloseGated(bounded, func(ctx context.Context) error {
		if err := s.UpsertLatest(ctx, []sink.StateRow{row}); err != nil {
			return err
		}
		_, _, err := s.Latest(ctx, sinkfixture.StateTable, "gated")
		return err
	}, closeOf(0, later, partial(t, 1, "line", "1", 2)))
	require.NoError(t, err, "a gate may write state through the same sink")
	got, err = s.ClosedThrough(ctx, tp(0))
	require.NoError(t, err)
	assert.Equal(t, later, got[tp(0)])
	stored, ok, err := s.Latest(ctx, sinkfixture.StateTable, "gated")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, row, stored)
}

func testConcurrentWriters(t *testing.T, f Factory, feat Features) {
	if !feat.ConcurrentWriters {
		t.Skip("the implementation does not declare concurrent writers")
	}
	ctx := ctxT(t)
	const partitions, windows, writers = 6, 3, 3
	for round := range feat.Rounds {
		// Up to 200 values per partial: some keys merge in digest mode.
		batches := scenario(t, uint64(100+round), partitions, windows, 30, 200)
		want := singleWriter(t, ctx, f, batches)
		s := registered(t, ctx, f, partitions)
		var wg sync.WaitGroup
		errs := make([]error, writers)
		for w := range writers {
			wg.Go(func() {
				// Each writer owns every writers-th partition and writes one call per
				// window holding all of them, as a consumer's tick does.
				for win := range windows {
					var call []sink.CloseBatch
					for p := w; p < partitions; p += writers {
						call = append(call, batches[p][win])
					}
					if err := s.WriteClose(ctx, call...); err != nil {
						errs[w] = err
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
	s := f(t, defaultSetup())
	got, err := s.ClosedThrough(ctx, tp(0), tp(1))
	require.NoError(t, err)
	assert.Empty(t, got, "no partition wrote yet")

	_, end0 := win(0)
	_, end2 := win(2)
	register(t, ctx, s, tp(3))
	require.NoError(t, s.WriteClose(ctx, closeOf(0, end2, partial(t, 0, "line", "1", 1))))
	require.NoError(t, s.WriteClose(ctx, closeOf(1, end0)), "a batch without partials records progress")
	require.NoError(t, s.WriteClose(ctx, closeOf(0, end0)), "an older closed_through")
	require.NoError(t, s.WriteClose(ctx, sink.CloseBatch{Source: tp(0)}), "a registration of a known partition")
	require.NoError(t, s.WriteClose(ctx, sink.CloseBatch{Source: tp(4), Empty: true}))
	got, err = s.ClosedThrough(ctx, tp(0), tp(1), tp(2), tp(3), tp(4), sink.TopicPartition{Topic: "other", Partition: 0})
	require.NoError(t, err)
	assert.Equal(t, map[sink.TopicPartition]time.Time{tp(0): end2, tp(1): end0}, got, "progress never goes back")
}

// testStaleBatch is a zombie's write: a consumer that lost its partition (paused past its
// session timeout) writes a close it made before, after the partition's new owner wrote
// further. Its rewritten partial is identical (a replay decides alike), so nothing changes:
// closed_through does not move back, readiness does not regress, and the merged rows equal
// those of a run without it.
func testStaleBatch(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	_, end0 := win(0)
	_, end1 := win(1)
	p0w0, p0w1 := partial(t, 0, "line", "1", 1, 2), partial(t, 1, "line", "1", 3)
	p1w0, p1w1 := partial(t, 0, "line", "1", 10), partial(t, 1, "line", "1", 20, 30)
	run := func(stale bool) (Subject, []sink.Aggregate) {
		s := f(t, defaultSetup())
		register(t, ctx, s, tps(2)...)
		require.NoError(t, s.WriteClose(ctx, closeOf(0, end1, p0w0, p0w1)), "the new owner of partition 0")
		if stale {
			require.NoError(t, s.WriteClose(ctx, closeOf(0, end0, p0w0)), "the zombie's older close")
			got, err := s.ClosedThrough(ctx, tp(0))
			require.NoError(t, err)
			assert.Equal(t, end1, got[tp(0)], "closed_through never moves back")
			through, ok, err := s.CompleteThrough(ctx, sinkfixture.Topic)
			require.NoError(t, err)
			require.True(t, ok)
			assert.True(t, through.Before(end0), "partition 1 still holds the windows back")
		}
		require.NoError(t, s.WriteClose(ctx, closeOf(1, end1, p1w0, p1w1)))
		return s, append(rowsOf(t, ctx, s, 0), rowsOf(t, ctx, s, 1)...)
	}
	_, want := run(false)
	require.Len(t, want, 2)
	s, got := run(true)
	assert.Equal(t, want, got, "the merged rows do not see the stale close")
	through, ok, err := s.CompleteThrough(ctx, sinkfixture.Topic)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, end1, through)
}

func testReadiness(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	s := f(t, defaultSetup())
	_, end0 := win(0)
	_, end1 := win(1)
	register(t, ctx, s, tps(2)...)
	_, ok, err := s.CompleteThrough(ctx, "nobody")
	require.NoError(t, err)
	assert.False(t, ok, "no partition of an unknown topic")
	through, ok, err := s.CompleteThrough(ctx, sinkfixture.Topic)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.True(t, through.IsZero(), "registered partitions that closed nothing: nothing is complete")

	require.NoError(t, s.WriteClose(ctx, closeOf(0, end1, partial(t, 0, "line", "1", 4))))
	through, ok, err = s.CompleteThrough(ctx, sinkfixture.Topic)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.True(t, through.IsZero())

	require.NoError(t, s.WriteClose(ctx, closeOf(1, end0)))
	row, ok := aggregate(t, ctx, s, keyOf(0, "line", "1"))
	require.True(t, ok)
	assert.True(t, row.Complete, "every partition closed through the window end")
	through, ok, err = s.CompleteThrough(ctx, sinkfixture.Topic)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, end0, through)

	// A partition of another topic that feeds nothing does not hold the row back.
	register(t, ctx, s, sink.TopicPartition{Topic: "positions", Partition: 0})
	row, _ = aggregate(t, ctx, s, row.Key)
	assert.True(t, row.Complete)
	// A partition added to the topic could still add to the row: it is not complete.
	register(t, ctx, s, tp(2))
	row, _ = aggregate(t, ctx, s, row.Key)
	assert.False(t, row.Complete)
	require.NoError(t, s.WriteClose(ctx, sink.CloseBatch{Source: tp(2), Empty: true}))
	row, _ = aggregate(t, ctx, s, row.Key)
	assert.True(t, row.Complete, "an empty partition holds nothing back")
}

func testAttributes(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	s := f(t, defaultSetup())
	register(t, ctx, s, tps(3)...)
	_, end := win(0)
	with := func(id, owner string, v float64) sink.Partial {
		p := partial(t, 0, "line", id, v)
		if owner != "" {
			p.Attrs = map[string]string{"owner": owner}
		}
		return p
	}
	require.NoError(t, s.WriteClose(ctx, closeOf(1, end, with("17", "east", 1), with("none", "", 1))))
	require.NoError(t, s.WriteClose(ctx, closeOf(0, end, with("17", "north", 2))))
	// A rewrite without the attribute keeps the stored one of its partial (COALESCE).
	require.NoError(t, s.WriteClose(ctx, closeOf(0, end, with("17", "", 2))))
	require.NoError(t, s.WriteClose(ctx, closeOf(2, end, with("17", "", 3))))
	row, ok := aggregate(t, ctx, s, keyOf(0, "line", "17"))
	require.True(t, ok)
	assert.Equal(t, map[string]string{"owner": "north"}, row.Attrs, "the first owner in (topic, partition) order")
	assert.Equal(t, int64(3), row.Count)
	row, ok = aggregate(t, ctx, s, keyOf(0, "line", "none"))
	require.True(t, ok)
	assert.Nil(t, row.Attrs, "no partial carried an owner")

	// A partition added later: its owner comes after the folded one's.
	register(t, ctx, s, tp(3))
	require.NoError(t, s.WriteClose(ctx, closeOf(3, end, with("17", "west", 4), with("none", "south", 4))))
	row, _ = aggregate(t, ctx, s, keyOf(0, "line", "17"))
	assert.Equal(t, map[string]string{"owner": "north"}, row.Attrs)
	row, _ = aggregate(t, ctx, s, keyOf(0, "line", "none"))
	assert.Equal(t, map[string]string{"owner": "south"}, row.Attrs)
	assert.Equal(t, int64(2), row.Count)
}

func testInvalidClose(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	s := f(t, defaultSetup())
	start, end := win(0)
	good := partial(t, 0, "line", "1", 1)
	other := partial(t, 0, "line", "2", 1)
	other.WindowEnd = end.Add(time.Minute)
	cases := map[string]sink.CloseBatch{
		"no topic":                 {Source: sink.TopicPartition{Partition: 0}, ClosedThrough: end, Partials: []sink.Partial{good}},
		"negative partition":       {Source: sink.TopicPartition{Topic: sinkfixture.Topic, Partition: -1}, ClosedThrough: end, Partials: []sink.Partial{good}},
		"end after closed_through": closeOf(0, start, good),
		"garbled stats":            closeOf(0, end, sink.Partial{Key: good.Key, WindowEnd: end, Stats: []byte{0xff, 1, 2}}),
		"empty stats":              closeOf(0, end, sink.Partial{Key: good.Key, WindowEnd: end, Stats: sinkfixture.Stats(t)}),
		"end before start":         closeOf(0, end, sink.Partial{Key: good.Key, WindowEnd: start, Stats: good.Stats}),
		"undeclared attribute":     closeOf(0, end, sink.Partial{Key: good.Key, WindowEnd: end, Stats: good.Stats, Attrs: map[string]string{"colour": "red"}}),
		"valid partial then bad":   closeOf(0, end, good, sink.Partial{Key: sink.Key{WindowStart: start, Dimension: "x"}, WindowEnd: end}),
		"one window, two ends":     closeOf(0, end.Add(time.Minute), good, other),
		"empty with progress":      {Source: tp(0), ClosedThrough: end, Empty: true},
		"empty with partials":      {Source: tp(0), ClosedThrough: end, Empty: true, Partials: []sink.Partial{good}},
	}
	for name, b := range cases {
		assert.ErrorIs(t, s.WriteClose(ctx, b), sink.ErrInvalid, name)
	}
	assert.Empty(t, rowsOf(t, ctx, s, 0), "an invalid batch writes nothing")
	progress, err := s.ClosedThrough(ctx, tp(0), tp(-1))
	require.NoError(t, err)
	assert.Empty(t, progress)
	require.NoError(t, s.WriteClose(ctx), "a call without batches writes nothing")
}
