package postgres_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/pgtest"
	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/postgres"
)

func TestMigrateConcurrentlyAndIdempotently(t *testing.T) {
	ctx := testCtx(t)
	db := pgtest.New(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		pool := db.NewPool(t, nil)
		s, err := postgres.New(pool, postgres.Config{Schema: db.Schema, Aggregates: sinkfixture.Aggregates(), States: sinkfixture.States()})
		require.NoError(t, err)
		e, err := postgres.NewEffects(pool, postgres.EffectConfig{Schema: db.Schema})
		require.NoError(t, err)
		wg.Go(func() {
			if errs[i] = s.Migrate(ctx); errs[i] == nil {
				errs[i] = e.Migrate(ctx)
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "process %d", i)
	}
	s := newSinkOn(t, db, nil) // and once more, serially
	require.NoError(t, s.Migrate(ctx))

	assert.Equal(t, map[string]int{
		"aggregates:aggregates": 3, "markers:streamledger_markers": 1,
		"progress:streamledger_progress": 2, "state:latest": 2,
	}, migrationVersions(t, db))
}

// migrationVersions reads the version of every object set.
func migrationVersions(t *testing.T, db *pgtest.DB) map[string]int {
	rows, err := db.Pool.Query(testCtx(t), "SELECT object, version FROM streamledger_migrations")
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (struct {
		o string
		v int
	}, error) {
		var x struct {
			o string
			v int
		}
		return x, r.Scan(&x.o, &x.v)
	})
	require.NoError(t, err)
	out := map[string]int{}
	for _, x := range got {
		out[x.o] = x.v
	}
	return out
}

// A state table at version 1 (the default fillfactor) is brought to version 2 (fillfactor 50),
// its rows kept.
func TestMigrateUpgradesStateTables(t *testing.T) {
	ctx := testCtx(t)
	s, db := newSink(t, nil)
	row := sink.StateRow{Table: sinkfixture.StateTable, Key: []any{"veh-1"}, ObservedAt: sinkfixture.Start(), Values: []any{"trip-1", 1.5, int64(2)}}
	require.NoError(t, s.UpsertLatest(ctx, []sink.StateRow{row}))
	_, err := db.Pool.Exec(ctx, "ALTER TABLE latest RESET (fillfactor)")
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, "UPDATE streamledger_migrations SET version = 1 WHERE object = 'state:latest'")
	require.NoError(t, err)
	require.NoError(t, s.Migrate(ctx))
	var opts []string
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT reloptions FROM pg_class WHERE oid = 'latest'::regclass").Scan(&opts))
	assert.Equal(t, []string{"fillfactor=50"}, opts)
	var n int
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*) FROM latest").Scan(&n))
	assert.Equal(t, 1, n)
}

func TestMigrateRefusesNewerSchema(t *testing.T) {
	ctx := testCtx(t)
	s, db := newSink(t, nil)
	_, err := db.Pool.Exec(ctx, "UPDATE streamledger_migrations SET version = 99 WHERE object = 'progress:streamledger_progress'")
	require.NoError(t, err)
	require.ErrorIs(t, s.Migrate(ctx), postgres.ErrSchemaTooNew)
}

// The aggregates' versions start at 3: a lower one is a layout Migrate does not convert, and
// it says so rather than write into it.
func TestMigrateRefusesLayoutBeforeFirstVersion(t *testing.T) {
	ctx := testCtx(t)
	s, db := newSink(t, nil)
	_, err := db.Pool.Exec(ctx, "UPDATE streamledger_migrations SET version = 2 WHERE object = 'aggregates:aggregates'")
	require.NoError(t, err)
	err = s.Migrate(ctx)
	require.Error(t, err)
	assert.NotErrorIs(t, err, postgres.ErrSchemaTooNew)
	assert.ErrorContains(t, err, "version 2 is a layout this build does not convert, expected version 3 or later")
}

// An attribute added to the configuration later is added to the merged table and the view.
func TestMigrateAddsAttributes(t *testing.T) {
	ctx := testCtx(t)
	db := pgtest.New(t)
	plain := newSinkOn(t, db, func(c *postgres.Config) { c.Aggregates.Attributes = nil })
	b := closeBatch(t, 0, 1, 2)
	require.NoError(t, plain.WriteClose(ctx, b))

	withAttr := newSinkOn(t, db, nil) // the suite's spec: operator
	next := closeBatch(t, 0, 3)
	next.Partials[0].WindowStart = next.ClosedThrough
	next.Partials[0].WindowEnd = next.ClosedThrough.Add(5 * time.Minute)
	next.ClosedThrough = next.Partials[0].WindowEnd
	next.Partials[0].Attrs = map[string]string{"owner": "QBUZZ"}
	require.NoError(t, withAttr.WriteClose(ctx, next))
	got, ok, err := withAttr.Aggregate(ctx, next.Partials[0].Key)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, map[string]string{"owner": "QBUZZ"}, got.Attrs)
	got, ok, err = withAttr.Aggregate(ctx, b.Partials[0].Key)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Nil(t, got.Attrs, "written before the attribute existed")
	assert.Equal(t, int64(2), got.Count)

	// Dropping it again replaces the view rather than failing.
	require.NoError(t, plain.Migrate(ctx))
	got, ok, err = plain.Aggregate(ctx, next.Partials[0].Key)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Nil(t, got.Attrs)
}

// Readers in SQL see completeness in the view.
func TestReadinessView(t *testing.T) {
	ctx := testCtx(t)
	s, db := newSink(t, nil)
	tp := func(p int32) sink.TopicPartition { return sink.TopicPartition{Topic: sinkfixture.Topic, Partition: p} }
	require.NoError(t, s.WriteClose(ctx, sink.CloseBatch{Source: tp(1)})) // registered, nothing closed
	require.NoError(t, s.WriteClose(ctx, closeBatch(t, 0, 5)))
	complete := func() (bool, bool) {
		var c bool
		err := db.Pool.QueryRow(ctx, "SELECT complete FROM aggregates_status WHERE window_start = $1 AND dimension = 'line' AND dimension_id = '1'", sinkfixture.Start()).Scan(&c)
		if errors.Is(err, pgx.ErrNoRows) {
			return false, false
		}
		require.NoError(t, err)
		return c, true
	}
	_, found := complete()
	assert.False(t, found, "partition 1 has not closed the window: no row yet")
	require.NoError(t, s.WriteClose(ctx, sink.CloseBatch{Source: tp(1), ClosedThrough: sinkfixture.Start().Add(time.Hour)}))
	c, found := complete()
	assert.True(t, found)
	assert.True(t, c)
	require.NoError(t, s.WriteClose(ctx, sink.CloseBatch{Source: tp(2)}))
	c, _ = complete()
	assert.False(t, c, "a partition registered later could still add to the row")
	require.NoError(t, s.WriteClose(ctx, sink.CloseBatch{Source: tp(2), Empty: true}))
	c, _ = complete()
	assert.True(t, c)
}

func TestNewRejectsBadConfig(t *testing.T) {
	db := pgtest.New(t)
	for name, tc := range map[string]struct {
		cfg  postgres.Config
		want string
	}{
		"quantile":           {postgres.Config{Aggregates: sink.AggregateSpec{Quantile: 1.5}}, "Config.Aggregates.Quantile is 1.5"},
		"attribute collides": {postgres.Config{Aggregates: sink.AggregateSpec{Attributes: []string{"window_end"}}}, `names column "window_end" twice`},
		"partials is folded": {postgres.Config{PartialsTable: "window_aggregates_folded"}, "Config.PartialsTable"},
		"duplicate column":   {postgres.Config{Aggregates: sink.AggregateSpec{Columns: sink.AggregateColumns{Mean: "event_count"}}}, "Config.Aggregates"},
		"progress is merged": {postgres.Config{ProgressTable: "window_aggregates"}, "Config.ProgressTable"},
		"state without key":  {postgres.Config{States: []sink.StateSpec{{Table: "s", ObservedAt: sink.Column{Name: "at"}}}}, "Config.States[0].Key"},
		"state is progress": {postgres.Config{States: []sink.StateSpec{{Table: "streamledger_progress", Key: []sink.Column{{Name: "k"}},
			ObservedAt: sink.Column{Name: "at"}}}}, "Config.States[0].Table"},
		"state twice the name": {postgres.Config{States: []sink.StateSpec{sinkfixture.Latest(), sinkfixture.Latest()}}, "Config.States[1].Table"},
	} {
		_, err := postgres.New(db.Pool, tc.cfg)
		assert.ErrorIs(t, err, sink.ErrConfig, name)
		assert.ErrorContains(t, err, tc.want, name)
	}
	_, err := postgres.New(nil, postgres.Config{})
	assert.ErrorIs(t, err, sink.ErrConfig)
	_, err = postgres.New(db.Pool, postgres.Config{Horizon: 24 * time.Hour, SourceRetention: 7 * 24 * time.Hour})
	assert.ErrorIs(t, err, sink.ErrHorizon)
	assert.ErrorIs(t, err, sink.ErrConfig)
	assert.ErrorContains(t, err, "Config.Horizon")
	_, err = postgres.New(db.Pool, postgres.Config{Horizon: -1, SourceRetention: 7 * 24 * time.Hour})
	assert.NoError(t, err, "folded windows kept forever cover any retention")
}
