package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/pgtest"
	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/merge"
)

// layoutV2 is the DDL that Migrate wrote before the compact layout (aggregates at version 2,
// progress at version 1), for the suite's tables.
var layoutV2 = []string{
	`CREATE TABLE streamledger_migrations ("object" text PRIMARY KEY, "version" integer NOT NULL, "applied_at" timestamptz NOT NULL DEFAULT now())`,
	`CREATE TABLE "streamledger_progress" ("topic" text NOT NULL, "partition" integer NOT NULL, "closed_through" timestamptz NOT NULL, ` +
		`"updated_at" timestamptz NOT NULL, PRIMARY KEY ("topic", "partition"))`,
	`CREATE TABLE "aggregates_partials" ("window_start" timestamptz NOT NULL, "dimension" text NOT NULL, "dimension_id" text NOT NULL, ` +
		`"topic" text NOT NULL, "partition" integer NOT NULL, "window_end" timestamptz NOT NULL, "stats" bytea NOT NULL, "owner" text, ` +
		`"written_at" timestamptz NOT NULL, PRIMARY KEY ("window_start", "dimension", "dimension_id", "topic", "partition"))`,
	`CREATE TABLE "aggregates" ("window_start" timestamptz NOT NULL, "window_end" timestamptz NOT NULL, "dimension" text NOT NULL, ` +
		`"dimension_id" text NOT NULL, "owner" text, "event_count" bigint NOT NULL, "mean_value" double precision NOT NULL, ` +
		`"p90_value" double precision NOT NULL, "max_value" double precision NOT NULL, "min_value" double precision NOT NULL, ` +
		`"computed_at" timestamptz NOT NULL, PRIMARY KEY ("window_start", "dimension", "dimension_id")) WITH (fillfactor = 50)`,
	`CREATE OR REPLACE VIEW "aggregates_status" AS SELECT a."window_start", a."window_end", a."dimension", a."dimension_id", ` +
		`a."event_count", a."mean_value", a."p90_value", a."max_value", a."min_value", a."computed_at", r."complete_through", ` +
		`COALESCE(a."window_end" <= r."complete_through", false) AS "complete", a."owner" FROM "aggregates" AS a ` +
		`LEFT JOIN LATERAL (SELECT min(pr."closed_through") AS "complete_through" FROM "streamledger_progress" AS pr WHERE pr."topic" IN ` +
		`(SELECT pa."topic" FROM "aggregates_partials" AS pa WHERE pa."window_start" = a."window_start" AND pa."dimension" = a."dimension" ` +
		`AND pa."dimension_id" = a."dimension_id")) AS r ON true`,
	`INSERT INTO streamledger_migrations ("object", "version") VALUES ('progress:streamledger_progress', 1), ('aggregates:aggregates', 2)`,
}

// Migrate converts a database of the per-key layout in place: a complete window becomes a
// folded row with its merged rows kept, a window still filling becomes compact rows and
// loses its filling merged rows, a registration stored as the zero time becomes NULL; later
// writes fold, refold and ignore replays as in a database created new.
func TestMigrateUpgradesPerKeyLayout(t *testing.T) {
	ctx := testCtx(t)
	db := pgtest.New(t)
	for _, stmt := range layoutV2 {
		_, err := db.Pool.Exec(ctx, stmt)
		require.NoError(t, err, stmt)
	}
	t0 := sinkfixture.Start()
	w0, w1 := t0, t0.Add(5*time.Minute)
	end0, end1 := w1, w1.Add(5*time.Minute)
	at := sinkfixture.Now()
	old := []struct {
		start    time.Time
		id       string
		p        int32
		operator *string
		values   []float64
	}{
		{w0, "A", 0, nil, []float64{1, 2}}, {w0, "A", 1, ptr("RET"), []float64{3}}, {w0, "B", 1, nil, []float64{4}},
		{w1, "A", 0, ptr("GVB"), []float64{5}},
	}
	for _, o := range old {
		_, err := db.Pool.Exec(ctx, `INSERT INTO aggregates_partials VALUES ($1, 'line', $2, 'arrivals', $3, $4, $5, $6, $7)`,
			o.start, o.id, o.p, o.start.Add(5*time.Minute), sinkfixture.Stats(t, o.values...), o.operator, at)
		require.NoError(t, err)
	}
	for _, m := range []struct {
		start    time.Time
		id       string
		operator *string
		count    int64
	}{{w0, "A", ptr("RET"), 3}, {w0, "B", nil, 1}, {w1, "A", ptr("GVB"), 1}} {
		_, err := db.Pool.Exec(ctx, `INSERT INTO aggregates VALUES ($1, $2, 'line', $3, $4, $5, 1, 1, 1, 1, $6)`,
			m.start, m.start.Add(5*time.Minute), m.id, m.operator, m.count, at)
		require.NoError(t, err)
	}
	for _, p := range []struct {
		topic string
		p     int32
		ct    time.Time
	}{{"arrivals", 0, end1}, {"arrivals", 1, end0}, {"positions", 0, time.Time{}}} {
		_, err := db.Pool.Exec(ctx, `INSERT INTO streamledger_progress VALUES ($1, $2, $3, $4)`, p.topic, p.p, p.ct, at)
		require.NoError(t, err)
	}

	s := newSinkOn(t, db, nil) // Migrate
	versions := migrationVersions(t, db)
	assert.Equal(t, 3, versions["aggregates:aggregates"])
	assert.Equal(t, 2, versions["progress:streamledger_progress"])
	var compact, folded, oldTables int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM aggregates_partials), (SELECT count(*) FROM aggregates_folded), `+
		`(SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename LIKE '%_v2')`).Scan(&compact, &folded, &oldTables))
	assert.Equal(t, [3]int{1, 1, 0}, [3]int{compact, folded, oldTables}, "window 1 compact, window 0 folded, the old table dropped")

	tp := func(topic string, p int32) sink.TopicPartition {
		return sink.TopicPartition{Topic: topic, Partition: p}
	}
	ct, err := s.ClosedThrough(ctx, tp("arrivals", 0), tp("arrivals", 1), tp("positions", 0))
	require.NoError(t, err)
	assert.Equal(t, map[sink.TopicPartition]time.Time{tp("arrivals", 0): end1, tp("arrivals", 1): end0}, ct,
		"the zero time of a registration is no closed_through")
	merged := func(start time.Time, id string) (sink.Aggregate, bool) {
		a, ok, err := s.Aggregate(ctx, sink.Key{WindowStart: start, Dimension: "line", DimensionID: id})
		require.NoError(t, err)
		return a, ok
	}
	a, ok := merged(w0, "A")
	require.True(t, ok)
	want, err := merge.Partials(sink.AggregateSpec{}, sinkfixture.Stats(t, 1, 2), sinkfixture.Stats(t, 3))
	require.NoError(t, err)
	assert.Equal(t, want, a.Summary, "the complete window's rows are the fold of its partials")
	assert.Equal(t, map[string]string{"owner": "RET"}, a.Attrs)
	assert.True(t, a.Complete)
	_, ok = merged(w1, "A")
	assert.False(t, ok, "window 1 was still filling: its merged row goes until it completes")

	// Partition 1 closes window 1: its fold merges the converted compact row.
	b := sink.CloseBatch{Source: tp("arrivals", 1), ClosedThrough: end1, Partials: []sink.Partial{
		{Key: sink.Key{WindowStart: w1, Dimension: "line", DimensionID: "A"}, WindowEnd: end1, Stats: sinkfixture.Stats(t, 6)}}}
	require.NoError(t, s.WriteClose(ctx, b))
	a, ok = merged(w1, "A")
	require.True(t, ok)
	assert.Equal(t, int64(2), a.Count)
	assert.Equal(t, map[string]string{"owner": "GVB"}, a.Attrs)
	// A partition added later is merged into the converted folded window; a replay is not.
	late := sink.CloseBatch{Source: tp("arrivals", 2), ClosedThrough: end0, Partials: []sink.Partial{
		{Key: sink.Key{WindowStart: w0, Dimension: "line", DimensionID: "A"}, WindowEnd: end0, Stats: sinkfixture.Stats(t, 7)}}}
	replay := sink.CloseBatch{Source: tp("arrivals", 0), ClosedThrough: end1, Partials: []sink.Partial{
		{Key: sink.Key{WindowStart: w0, Dimension: "line", DimensionID: "A"}, WindowEnd: end0, Stats: sinkfixture.Stats(t, 100)}}}
	require.NoError(t, s.WriteClose(ctx, late, replay))
	a, _ = merged(w0, "A")
	assert.Equal(t, int64(4), a.Count)
	assert.Equal(t, 7.0, a.Max)
	require.NoError(t, s.Migrate(context.WithoutCancel(ctx)), "and Migrate is idempotent on the new layout")
}

func ptr[T any](v T) *T { return &v }
