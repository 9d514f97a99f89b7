package postgres

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/pgtest"
	"github.com/streamledger/streamledger/sink"
)

// chunkOf returns merged rows of window start, one per id, each with count 1.
func chunkOf(start time.Time, ids ...string) *mergedRows {
	m := newMergedRows(len(ids), 0, start)
	for _, id := range ids {
		m.add(sink.Key{WindowStart: start, Dimension: "line", DimensionID: id}, start.Add(5*time.Minute), nil,
			sink.Summary{Count: 1, Mean: 1, Quantile: 1, Max: 1, Min: 1})
	}
	return m
}

// copySink returns a sink with cfg on a schema of its own, not migrated, and a context
// that ends with the test.
func copySink(t *testing.T, cfg Config) (context.Context, *pgtest.DB, *Sink) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	db := pgtest.New(t)
	cfg.Schema = db.Schema
	s, err := New(db.Pool, cfg)
	require.NoError(t, err)
	return ctx, db, s
}

// The copy of merged rows takes chunks while it streams them, ends at finish, and reports
// how it ended: rows copied, a row that exists, a cancelled context, or chunks sent after
// it ended. It never leaves its goroutine behind on the transaction.
func TestMergedCopy(t *testing.T) {
	ctx, db, s := copySink(t, Config{})
	require.NoError(t, s.Migrate(ctx))
	start := time.Date(2026, 3, 2, 7, 0, 0, 0, time.UTC)
	ids := func(from, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("l%06d", from+i)
		}
		return out
	}
	inTx := func(fn func(ctx context.Context, tx pgx.Tx) error) error {
		return pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error { return fn(ctx, tx) })
	}

	require.NoError(t, inTx(func(ctx context.Context, tx pgx.Tx) error {
		c := s.startCopy(ctx, tx)
		for k := range 3 {
			require.NoError(t, c.send(chunkOf(start, ids(k*1000, 1000)...)))
		}
		require.NoError(t, c.finish())
		require.NoError(t, c.finish(), "finish again: the same outcome")
		assert.ErrorContains(t, c.send(chunkOf(start, "late")), "after the copy of 3000 rows ended")
		return nil
	}))
	got, err := s.Aggregates(ctx, start)
	require.NoError(t, err)
	assert.Len(t, got, 3000)

	err = inTx(func(ctx context.Context, tx pgx.Tx) error {
		c := s.startCopy(ctx, tx)
		var err error
		for k := 0; err == nil && k < 50; k++ {
			from := 3000 + k*1000
			if k == 9 {
				from = 0 // rows copied by the first transaction
			}
			err = c.send(chunkOf(start, ids(from, 1000)...))
		}
		if ferr := c.finish(); err == nil {
			err = ferr
		}
		return err
	})
	require.Error(t, err)
	assert.True(t, isUniqueViolation(err), "the unique violation is reported: %v", err)

	cctx, ccancel := context.WithCancel(ctx)
	err = pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		c := s.startCopy(cctx, tx)
		require.NoError(t, c.send(chunkOf(start.Add(time.Hour), ids(0, 10)...)))
		ccancel()
		return c.finish()
	})
	assert.ErrorIs(t, err, context.Canceled)
}

// copyChunk runs copyFn over one chunk of rows in a transaction of its own.
func copyChunk(ctx context.Context, pool *pgxpool.Pool, rows *mergedRows,
	copyFn func(context.Context, pgx.Tx, <-chan *mergedRows) error) error {
	ch := make(chan *mergedRows, 1)
	ch <- rows
	close(ch)
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return copyFn(ctx, tx, ch) })
}

// The merged rows' binary encoding stores what pgx's CopyFrom stores for the same rows:
// timestamps cut to microseconds, NULL and empty attributes, text beyond ASCII, negative,
// huge and non-integral numbers.
func TestMergedCopyBinaryMatchesPgx(t *testing.T) {
	ctx, db, s := copySink(t, Config{Aggregates: sink.AggregateSpec{Attributes: []string{"owner", "mode"}}})
	require.NoError(t, s.Migrate(ctx))
	empty, owner := "", "Qbuzz — Groningen"
	rowsAt := func(start time.Time) *mergedRows {
		now := start.Add(90*time.Minute + 1234567*time.Nanosecond)
		m := newMergedRows(4, 2, now)
		m.add(sink.Key{WindowStart: start, Dimension: "line", DimensionID: "Zürich ☃"},
			start.Add(5*time.Minute+999*time.Nanosecond), []*string{&owner, nil},
			sink.Summary{Count: 1, Mean: -0.5, Quantile: 1e-300, Max: math.MaxFloat64, Min: -math.MaxFloat64})
		m.add(sink.Key{WindowStart: start, Dimension: "stop", DimensionID: ""},
			start.Add(5*time.Minute), []*string{nil, &empty},
			sink.Summary{Count: math.MaxInt64, Mean: 3.25, Quantile: 2, Max: 7, Min: 0})
		m.add(sink.Key{WindowStart: start, Dimension: "x", DimensionID: "1"},
			start.Add(5*time.Minute), []*string{nil, nil}, sink.Summary{Count: -3, Mean: math.Inf(1), Quantile: math.Inf(-1)})
		return m
	}
	bin, err := s.binaryMerged(ctx, mustBegin(t, db.Pool))
	require.NoError(t, err)
	require.True(t, bin, "the migrated table takes the binary encoding")

	a := time.Date(2026, 3, 2, 7, 0, 0, 0, time.UTC)
	b := a.Add(time.Hour)
	require.NoError(t, copyChunk(ctx, db.Pool, rowsAt(a), s.copyBinary))
	require.NoError(t, copyChunk(ctx, db.Pool, rowsAt(b), s.copyGeneric))
	got, err := s.Aggregates(ctx, a)
	require.NoError(t, err)
	want, err := s.Aggregates(ctx, b)
	require.NoError(t, err)
	require.Len(t, got, 3)
	require.Len(t, want, 3)
	for i := range got {
		g, w := got[i], want[i]
		assert.Equal(t, w.WindowStart.Add(-time.Hour), g.WindowStart)
		assert.Equal(t, w.WindowEnd.Add(-time.Hour), g.WindowEnd)
		assert.Equal(t, w.ComputedAt.Add(-time.Hour), g.ComputedAt)
		w.WindowStart, w.WindowEnd, w.ComputedAt = g.WindowStart, g.WindowEnd, g.ComputedAt
		assert.Equal(t, w, g)
	}
	assert.Equal(t, "Zürich ☃", got[0].DimensionID)
	assert.Equal(t, map[string]string{"owner": owner}, got[0].Attrs)
	assert.Equal(t, a.Add(5*time.Minute), got[0].WindowEnd, "cut to microseconds")
}

func mustBegin(t *testing.T, pool *pgxpool.Pool) pgx.Tx {
	t.Helper()
	tx, err := pool.Begin(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}

// A merged table whose columns have other types than Migrate gives them (made by its owner
// before Migrate) takes its rows through pgx's encoding, which converts them.
func TestMergedCopyOtherColumnTypes(t *testing.T) {
	ctx, db, s := copySink(t, Config{})
	_, err := db.Pool.Exec(ctx, fmt.Sprintf(`CREATE TABLE %s ("window_start" timestamptz NOT NULL, `+
		`"window_end" timestamptz NOT NULL, "dimension" varchar(20) NOT NULL, "dimension_id" text NOT NULL, `+
		`"event_count" integer NOT NULL, "mean_value" numeric NOT NULL, "quantile_value" real NOT NULL, `+
		`"max_value" float8 NOT NULL, "min_value" float8 NOT NULL, "computed_at" timestamptz NOT NULL, PRIMARY KEY ("window_start", "dimension", "dimension_id"))`,
		ident(db.Schema, s.cfg.Aggregates.Table)))
	require.NoError(t, err)
	require.NoError(t, s.Migrate(ctx))
	start := time.Date(2026, 3, 2, 7, 0, 0, 0, time.UTC)

	require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		c := s.startCopy(ctx, tx)
		require.NoError(t, c.send(chunkOf(start, "a", "b")))
		return c.finish()
	}))
	bin, err := s.binaryMerged(ctx, mustBegin(t, db.Pool))
	require.NoError(t, err)
	assert.False(t, bin, "count integer, mean numeric and quantile real are not the binary encoding's")
	got, err := s.Aggregates(ctx, start)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, sink.Summary{Count: 1, Mean: 1, Quantile: 1, Max: 1, Min: 1}, got[1].Summary)
}

// copyTrace records the COPYs a pool's connections report to their tracer.
type copyTrace struct {
	mu     sync.Mutex
	copies []string // table: rows, or table: error
}

type copyTraceKey struct{}

func (c *copyTrace) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}
func (c *copyTrace) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *copyTrace) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceCopyFromStartData) context.Context {
	return context.WithValue(ctx, copyTraceKey{}, d.TableName.Sanitize()+" "+strings.Join(d.ColumnNames, ","))
}

func (c *copyTrace) TraceCopyFromEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceCopyFromEndData) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.copies = append(c.copies, fmt.Sprintf("%s: %d rows, error %v", ctx.Value(copyTraceKey{}), d.CommandTag.RowsAffected(), d.Err))
}

// The binary COPYs are reported to the connection's tracer as pgx's CopyFrom reports its own.
func TestBinaryCopyTraced(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := pgtest.New(t)
	trace := &copyTrace{}
	pool := db.NewPool(t, func(c *pgxpool.Config) { c.ConnConfig.Tracer = trace })
	spec := sink.StateSpec{Table: "latest", Key: []sink.Column{{Name: "id", Type: sink.Text}},
		ObservedAt: sink.Column{Name: "observed_at", Type: sink.Timestamp}, Values: []sink.Column{{Name: "v", Type: sink.Float64}}}
	s, err := New(pool, Config{Schema: db.Schema, States: []sink.StateSpec{spec}})
	require.NoError(t, err)
	require.NoError(t, s.Migrate(ctx))
	at := time.Date(2026, 3, 2, 7, 0, 0, 0, time.UTC)
	require.NoError(t, s.UpsertLatest(ctx, []sink.StateRow{
		{Table: "latest", Key: []any{"a"}, ObservedAt: at, Values: []any{1.5}},
		{Table: "latest", Key: []any{"b"}, ObservedAt: at, Values: []any{nil}},
	}))
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		c := s.startCopy(ctx, tx)
		require.NoError(t, c.send(chunkOf(at, "x", "y", "z")))
		return c.finish()
	}))
	trace.mu.Lock()
	defer trace.mu.Unlock()
	assert.Equal(t, []string{
		`"streamledger_tmp_latest" id,observed_at,v: 2 rows, error <nil>`,
		fmt.Sprintf(`"%s"."window_aggregates" window_start,window_end,dimension,dimension_id,event_count,`+
			`mean_value,quantile_value,max_value,min_value,computed_at: 3 rows, error <nil>`, db.Schema),
	}, trace.copies)
}
