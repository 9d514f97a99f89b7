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

	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/sink"
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
	// Horizon is how long folded windows are kept (zero: the implementation's default).
	Horizon time.Duration
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

// defaultSetup is the setup every suite test uses.
func defaultSetup() Setup {
	return Setup{Aggregates: sinkfixture.Aggregates(), States: sinkfixture.States(), Clock: sinkfixture.Now}
}

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
		{"DuplicateWindowIsOneRow", testDuplicateWindow},
		{"RegistrationHoldsWindows", testRegistrationHolds},
		{"EmptyReleases", testEmptyReleases},
		{"NonContributingTopicNeverHolds", testNonContributingTopic},
		{"CompleteWindowsOnly", testCompleteOnly},
		{"PartialRewriteReplacesBeforeCompletion", testPartialRewriteReplaces},
		{"MergeAcrossPartitions", testMergeAcrossPartitions},
		{"DuplicateAndReorderedBatches", testDuplicateAndReordered},
		{"MergeDeterminism", testMergeDeterminism},
		{"RefoldForLaterPartition", testRefold},
		{"QuantileDefinition", testQuantileDefinition},
		{"ReplayOfFoldedWindowIgnored", testReplayIgnored},
		{"HorizonPruning", testHorizon},
		{"CallIsAtomic", testCallAtomic},
		{"GatedClose", testGatedClose},
		{"ConcurrentWriters", testConcurrentWriters},
		{"Progress", testProgress},
		{"StaleBatchOfAZombie", testStaleBatch},
		{"Readiness", testReadiness},
		{"Attributes", testAttributes},
		{"InvalidCloseWritesNothing", testInvalidClose},
		{"LatestGuard", testLatestGuard},
		{"LatestReorderedBatches", testLatestReordered},
		{"LatestConcurrentWriters", testLatestConcurrent},
		{"InvalidLatestWritesNothing", testInvalidLatest},
		{"LatestTablesInOneCall", testLatestTables},
		{"TimePrecision", testPrecision},
		{"Tables", testTables},
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

func tp(p int32) sink.TopicPartition {
	return sink.TopicPartition{Topic: sinkfixture.Topic, Partition: p}
}

func win(i int) (start, end time.Time) {
	start = sinkfixture.Start().Add(time.Duration(i) * sinkfixture.WindowSize)
	return start, start.Add(sinkfixture.WindowSize)
}

func partial(t testing.TB, w int, dim, id string, values ...float64) sink.Partial {
	start, end := win(w)
	return sink.Partial{Key: sink.Key{WindowStart: start, Dimension: dim, DimensionID: id}, WindowEnd: end, Stats: sinkfixture.Stats(t, values...)}
}

func stateRow(id string, at time.Time, label string, value float64, seq int64) sink.StateRow {
	return sink.StateRow{Table: sinkfixture.StateTable, Key: []any{id}, ObservedAt: at, Values: []any{label, value, seq}}
}

func testLatestGuard(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	s := f(t, defaultSetup())
	at := sinkfixture.Start().Add(30 * time.Second)
	latest := func(id string) sink.StateRow {
		t.Helper()
		r, ok, err := s.Latest(ctx, sinkfixture.StateTable, id)
		require.NoError(t, err)
		require.True(t, ok, id)
		return r
	}
	require.NoError(t, s.UpsertLatest(ctx, []sink.StateRow{stateRow("e-1", at, "t1", 12.5, 3)}))
	assert.Equal(t, stateRow("e-1", at, "t1", 12.5, 3), latest("e-1"))

	require.NoError(t, s.UpsertLatest(ctx, []sink.StateRow{stateRow("e-1", at.Add(-time.Second), "old", 0, 1)}))
	assert.Equal(t, stateRow("e-1", at, "t1", 12.5, 3), latest("e-1"), "an older row never replaces a newer one")

	require.NoError(t, s.UpsertLatest(ctx, []sink.StateRow{stateRow("e-1", at, "same-time", 1, 4)}))
	assert.Equal(t, stateRow("e-1", at, "same-time", 1, 4), latest("e-1"), "the guard is >=: an equal time replaces")

	// One batch holding a newer and then an older row for the same key: the newer stays.
	later := at.Add(time.Minute)
	require.NoError(t, s.UpsertLatest(ctx, []sink.StateRow{
		stateRow("e-1", later, "new", 2, 5),
		stateRow("e-2", later, "x", 3, 1),
		stateRow("e-1", at.Add(30*time.Second), "stale", 9, 9),
	}))
	assert.Equal(t, stateRow("e-1", later, "new", 2, 5), latest("e-1"))
	assert.Equal(t, stateRow("e-2", later, "x", 3, 1), latest("e-2"))

	_, ok, err := s.Latest(ctx, sinkfixture.StateTable, "e-9")
	require.NoError(t, err)
	assert.False(t, ok)
	require.NoError(t, s.UpsertLatest(ctx, nil), "an empty batch is a no-op")
}

func testLatestReordered(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	r := rand.New(rand.NewPCG(5, 5))
	var rows []sink.StateRow
	want := map[string]sink.StateRow{}
	for v := range 20 {
		id := fmt.Sprintf("e-%02d", v)
		for i := range 10 {
			row := stateRow(id, sinkfixture.Start().Add(time.Duration(r.IntN(100000))*time.Second+time.Duration(i)), fmt.Sprintf("label-%d", i), float64(r.IntN(600)), int64(i))
			row.ObservedAt = row.ObservedAt.Truncate(time.Second).Add(time.Duration(i) * time.Hour * 24 * 30)
			rows = append(rows, row)
			if w, ok := want[id]; !ok || row.ObservedAt.After(w.ObservedAt) {
				want[id] = row
			}
		}
	}
	for round := range 2 {
		s := f(t, defaultSetup())
		perm := r.Perm(len(rows))
		for i := 0; i < len(perm); i += 17 {
			var batch []sink.StateRow
			for _, j := range perm[i:min(i+17, len(perm))] {
				batch = append(batch, rows[j])
			}
			require.NoError(t, s.UpsertLatest(ctx, batch))
		}
		// A redelivery of everything, in one batch, in reverse.
		rev := slices.Clone(rows)
		slices.Reverse(rev)
		require.NoError(t, s.UpsertLatest(ctx, rev))
		for id, w := range want {
			got, ok, err := s.Latest(ctx, sinkfixture.StateTable, id)
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
	s := f(t, defaultSetup())
	const writers, entities, rounds = 4, 50, 20
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for w := range writers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 9))
			for round := range rounds {
				// Every writer touches every entity, in its own order, so row locks are
				// requested in conflicting orders unless the sink orders them.
				batch := make([]sink.StateRow, 0, entities)
				for _, v := range r.Perm(entities) {
					at := sinkfixture.Start().Add(time.Duration(round*writers+w) * time.Second)
					batch = append(batch, stateRow(fmt.Sprintf("e-%02d", v), at, fmt.Sprintf("w%d", w), float64(round), int64(round*writers+w)))
				}
				if err := s.UpsertLatest(ctx, batch); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	last := (rounds-1)*writers + writers - 1
	for v := range entities {
		id := fmt.Sprintf("e-%02d", v)
		got, ok, err := s.Latest(ctx, sinkfixture.StateTable, id)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, stateRow(id, sinkfixture.Start().Add(time.Duration(last)*time.Second), fmt.Sprintf("w%d", writers-1), float64(rounds-1), int64(last)), got)
	}
}

// testLatestTables writes the rows of two tables in one call: each lands in its own table,
// and a call with a row that does not fit its table writes nothing of any table.
func testLatestTables(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	second := sinkfixture.Latest()
	second.Table = sinkfixture.StateTable + "_2"
	setup := defaultSetup()
	setup.States = append(setup.States, second)
	s := f(t, setup)
	at := sinkfixture.Start()
	inSecond := func(r sink.StateRow) sink.StateRow { r.Table = second.Table; return r }
	require.NoError(t, s.UpsertLatest(ctx, []sink.StateRow{
		inSecond(stateRow("e-1", at, "second", 2, 2)), stateRow("e-1", at, "first", 1, 1),
	}))
	for table, want := range map[string]string{sinkfixture.StateTable: "first", second.Table: "second"} {
		got, ok, err := s.Latest(ctx, table, "e-1")
		require.NoError(t, err)
		require.True(t, ok, table)
		assert.Equal(t, table, got.Table)
		assert.Equal(t, want, got.Values[0], table)
	}
	bad := inSecond(stateRow("e-2", at, "second", 2, 2))
	bad.Values = bad.Values[:1]
	require.ErrorIs(t, s.UpsertLatest(ctx, []sink.StateRow{stateRow("e-2", at, "first", 1, 1), bad}), sink.ErrInvalid)
	_, ok, err := s.Latest(ctx, sinkfixture.StateTable, "e-2")
	require.NoError(t, err)
	assert.False(t, ok, "nothing of a refused call is written")
}

func testInvalidLatest(t *testing.T, f Factory, _ Features) {
	ctx := ctxT(t)
	s := f(t, defaultSetup())
	at := sinkfixture.Start()
	for name, rows := range map[string][]sink.StateRow{
		"short key":      {{Key: nil, ObservedAt: at, Values: []any{"t", 1.0, int64(1)}}},
		"short values":   {{Key: []any{"v"}, ObservedAt: at, Values: []any{"t"}}},
		"no observed_at": {{Key: []any{"v"}, Values: []any{"t", 1.0, int64(1)}}},
	} {
		assert.ErrorIs(t, s.UpsertLatest(ctx, rows), sink.ErrInvalid, name)
	}
	other := stateRow("w", at, "t", 1, 1)
	other.Table = "no_such_table"
	assert.ErrorIs(t, s.UpsertLatest(ctx, []sink.StateRow{stateRow("v", at, "t", 1, 1), other}), sink.ErrInvalid,
		"a row of an undeclared table refuses the whole call")
	_, ok, err := s.Latest(ctx, sinkfixture.StateTable, "v")
	require.NoError(t, err)
	assert.False(t, ok)
}
