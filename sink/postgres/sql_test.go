package postgres_test

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/pgtest"
	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/postgres"
)

// statementLog records every statement sent through a pool: queries, and each query of a
// batch.
type statementLog struct {
	mu  sync.Mutex
	sql []string
}

func (l *statementLog) add(sql string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sql = append(l.sql, sql)
}

func (l *statementLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.sql...)
}

func (l *statementLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.add(d.SQL)
	return ctx
}
func (l *statementLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (l *statementLog) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (l *statementLog) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	l.add(d.SQL)
}
func (l *statementLog) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// tracedPool returns a pool on db's schema that logs every statement.
func tracedPool(t *testing.T, db *pgtest.DB) (*pgxpool.Pool, *statementLog) {
	log := &statementLog{}
	return db.NewPool(t, func(c *pgxpool.Config) { c.ConnConfig.Tracer = log }), log
}

var plusAfterDoUpdate = regexp.MustCompile(`(?is)DO\s+UPDATE.*\+`)

// updateSet captures the SET list of an UPDATE ... SET ... FROM statement.
var updateSet = regexp.MustCompile(`(?is)^UPDATE\s.*?\sSET\s(.*)\sFROM\s`)

// checkStatements applies the SQL checks (replace, never add after DO UPDATE) to every statement.
func checkStatements(t *testing.T, stmts []string) (upserts, guards int) {
	t.Helper()
	guard := `WHERE EXCLUDED."observed_at" >= "latest"."observed_at"`
	for _, sql := range stmts {
		if m := updateSet.FindStringSubmatch(sql); m != nil {
			upserts++
			assert.NotContains(t, m[1], "+", "aggregates replace, never add: %s", sql)
			continue
		}
		if !strings.Contains(sql, "DO UPDATE") {
			continue
		}
		upserts++
		assert.False(t, plusAfterDoUpdate.MatchString(sql), "aggregates replace, never add: %s", sql)
		if strings.Contains(sql, `"latest"`) {
			assert.Contains(t, sql, guard, "the last-write-wins guard: %s", sql)
			guards++
		}
	}
	return upserts, guards
}

// A workload through every strategy, with every statement the pool sent checked: no `+`
// after DO UPDATE, the LWW guard on every state upsert, and no value inlined into SQL.
func TestGeneratedSQL(t *testing.T) {
	ctx := testCtx(t)
	for _, st := range []postgres.Strategy{postgres.StrategyUnnest, postgres.StrategyCopy, postgres.StrategyBatch} {
		t.Run(st.String(), func(t *testing.T) {
			db := pgtest.New(t)
			pool, log := tracedPool(t, db)
			s, err := postgres.New(pool, postgres.Config{Schema: db.Schema, Aggregates: sinkfixture.Aggregates(), States: sinkfixture.States(), Clock: sinkfixture.Now})
			require.NoError(t, err)
			postgres.SetStrategy(s, st)
			require.NoError(t, s.Migrate(ctx))

			const secret = "GVB-value-not-in-sql"
			start := sinkfixture.Start()
			end := start.Add(5 * time.Minute)
			for p := range int32(2) {
				require.NoError(t, s.WriteClose(ctx, sink.CloseBatch{
					Source: sink.TopicPartition{Topic: "topic-value-not-in-sql", Partition: p}, ClosedThrough: end,
					Partials: []sink.Partial{{Key: sink.Key{WindowStart: start, Dimension: "line", DimensionID: secret},
						WindowEnd: end, Attrs: map[string]string{"owner": secret}, Stats: sinkfixture.Stats(t, 1, 2, 3)}},
				}))
			}
			require.NoError(t, s.UpsertLatest(ctx, []sink.StateRow{
				{Table: sinkfixture.StateTable, Key: []any{secret}, ObservedAt: start, Values: []any{secret, 1.5, int64(2)}},
			}))
			_, _, err = s.Latest(ctx, sinkfixture.StateTable, secret)
			require.NoError(t, err)

			sent := log.all()
			upserts, guards := checkStatements(t, sent)
			assert.GreaterOrEqual(t, upserts, 4, "partials, merged, progress and state upserts were sent")
			assert.Positive(t, guards)
			for _, sql := range sent {
				assert.NotContains(t, sql, "value-not-in-sql", "values travel as parameters only")
			}

			// And the statements the sink reports as generated, in every form.
			upserts, guards = checkStatements(t, s.Statements())
			assert.GreaterOrEqual(t, upserts, 8)
			assert.Positive(t, guards)
		})
	}
}

func TestGeneratedSQLOfEffects(t *testing.T) {
	db := pgtest.New(t)
	e, err := postgres.NewEffects(db.Pool, postgres.EffectConfig{Schema: db.Schema})
	require.NoError(t, err)
	stmts := e.Statements()
	checkStatements(t, stmts)
	assert.Contains(t, strings.Join(stmts, "\n"), "ON CONFLICT (\"op_id\") DO NOTHING RETURNING")
}

// Names are identifiers, quoted: hostile table, column and attribute names work and inject
// nothing.
func TestIdentifiersAreQuoted(t *testing.T) {
	ctx := testCtx(t)
	db := pgtest.New(t)
	hostile := `agg"; DROP TABLE victim; --`
	_, err := db.Pool.Exec(ctx, "CREATE TABLE victim (id int)")
	require.NoError(t, err)
	s, err := postgres.New(db.Pool, postgres.Config{
		Schema: db.Schema,
		Aggregates: sink.AggregateSpec{Table: hostile, Attributes: []string{`Op"er ator`},
			Columns: sink.AggregateColumns{Count: "Event Count"}},
		ProgressTable: "Progress Table",
		States: []sink.StateSpec{{Table: `state"x`, Key: []sink.Column{{Name: `id"`, Type: sink.Text}},
			ObservedAt: sink.Column{Name: "observed at", Type: sink.Timestamp}, Values: []sink.Column{{Name: "v;", Type: sink.Int64}}}},
	})
	require.NoError(t, err)
	require.NoError(t, s.Migrate(ctx))
	start := sinkfixture.Start()
	end := start.Add(5 * time.Minute)
	k := sink.Key{WindowStart: start, Dimension: "d", DimensionID: "i"}
	require.NoError(t, s.WriteClose(ctx, sink.CloseBatch{Source: sink.TopicPartition{Topic: "t"}, ClosedThrough: end,
		Partials: []sink.Partial{{Key: k, WindowEnd: end, Attrs: map[string]string{`Op"er ator`: "x"}, Stats: sinkfixture.Stats(t, 4)}}}))
	got, ok, err := s.Aggregate(ctx, k)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, int64(1), got.Count)
	assert.Equal(t, map[string]string{`Op"er ator`: "x"}, got.Attrs)
	assert.True(t, got.Complete)
	require.NoError(t, s.UpsertLatest(ctx, []sink.StateRow{{Table: `state"x`, Key: []any{"a"}, ObservedAt: start, Values: []any{int64(7)}}}))
	row, ok, err := s.Latest(ctx, `state"x`, "a")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, []any{int64(7)}, row.Values)
	var n int
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*) FROM victim").Scan(&n), "the victim table survived")
}

// A permanent failure is typed, not retried, and reports what failed.
func TestPermanentErrorIsTypedAndNotRetried(t *testing.T) {
	ctx := testCtx(t)
	s, db := newSink(t, nil)
	_, err := db.Pool.Exec(ctx, "DROP TABLE latest")
	require.NoError(t, err)
	err = s.UpsertLatest(ctx, []sink.StateRow{{Table: sinkfixture.StateTable, Key: []any{"v"}, ObservedAt: sinkfixture.Start(), Values: []any{"t", 1.0, int64(1)}}})
	var we *sink.WriteError
	require.ErrorAs(t, err, &we)
	assert.False(t, we.Transient)
	assert.Equal(t, 1, we.Attempts)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	assert.Equal(t, "42P01", pgErr.Code, "undefined_table")
}

// The check itself must catch an accumulator.
func TestPlusCheckCatchesAccumulator(t *testing.T) {
	assert.True(t, plusAfterDoUpdate.MatchString(`INSERT INTO a VALUES ($1) ON CONFLICT (k) DO UPDATE SET "n" = a."n" + EXCLUDED."n"`))
	assert.False(t, plusAfterDoUpdate.MatchString(`INSERT INTO a VALUES ($1) ON CONFLICT (k) DO UPDATE SET "n" = EXCLUDED."n"`))
	set := updateSet.FindStringSubmatch(`UPDATE "a" AS t SET "n" = t."n" + u.c1 FROM unnest($1::int8[]) AS u(c1) WHERE true`)
	require.NotNil(t, set)
	assert.Contains(t, set[1], "+")
	set = updateSet.FindStringSubmatch(`UPDATE "a" AS t SET "n" = u.c1 FROM unnest($1::int8[]) AS u(c1) WHERE t."k" = u.c0 + 0`)
	require.NotNil(t, set)
	assert.NotContains(t, set[1], "+", "only the SET list counts")
}
