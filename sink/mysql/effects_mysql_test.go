package mysql_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/effecttest"
	"github.com/streamledger/streamledger/internal/mytest"
	"github.com/streamledger/streamledger/sink"
	mysink "github.com/streamledger/streamledger/sink/mysql"
)

// applied is the result of an effect that applied all n operations.
func applied(n int) []sink.Result {
	res := make([]sink.Result, n)
	for i := range res {
		res[i].Outcome = sink.Applied
	}
	return res
}

func outcomesOf(res []sink.Result) []sink.Outcome {
	out := make([]sink.Outcome, len(res))
	for i, r := range res {
		out[i] = r.Outcome
	}
	return out
}

// IDs are compared byte by byte, as Go compares strings: no collation folds case or ignores
// trailing spaces. An ID longer than the marker table holds is rejected, with its
// repetitions, and holds back no other operation.
func TestEffectIDs(t *testing.T) {
	ctx := effecttest.Ctx(t)
	db := newBank(t, map[string]int64{"a": 0})
	e := db.Effects(t, effecttest.Config{}, false)
	long := strings.Repeat("x", mysink.MaxIDBytes+1)
	longest := strings.Repeat("y", mysink.MaxIDBytes)
	batch := []effecttest.Credit{
		{OpID: "op", Account: "a", Amount: 1},
		{OpID: "OP", Account: "a", Amount: 2},
		{OpID: "op ", Account: "a", Amount: 4},
		{OpID: long, Account: "a", Amount: 8},
		{OpID: longest, Account: "a", Amount: 16},
		{OpID: long, Account: "a", Amount: 8},
		{OpID: "é", Account: "a", Amount: 32},
		{OpID: "e", Account: "a", Amount: 64},
	}
	res, err := e.Apply(ctx, batch)
	require.NoError(t, err)
	assert.Equal(t, []sink.Outcome{sink.Applied, sink.Applied, sink.Applied, sink.Rejected, sink.Applied, sink.Rejected, sink.Applied, sink.Applied},
		outcomesOf(res))
	assert.ErrorIs(t, res[3].Err, mysink.ErrIDTooLong)
	assert.ErrorIs(t, res[5].Err, mysink.ErrIDTooLong)
	assert.Equal(t, int64(1+2+4+16+32+64), db.Balance(t, "a"))
	assert.Len(t, db.Markers(t), 6)
	assert.NotContains(t, db.Markers(t), long)

	res, err = e.Apply(ctx, batch)
	require.NoError(t, err)
	assert.Equal(t, []sink.Outcome{sink.Duplicate, sink.Duplicate, sink.Duplicate, sink.Rejected, sink.Duplicate, sink.Rejected, sink.Duplicate, sink.Duplicate},
		outcomesOf(res), "applied again")
}

// Batches longer than one statement's markers: every list of markers (insert, read) is cut
// into statements, and the results are those of one statement.
func TestEffectChunks(t *testing.T) {
	ctx := effecttest.Ctx(t)
	db := newBank(t, map[string]int64{"a": 0, "b": 0})
	e := db.Effects(t, effecttest.Config{}, false)
	mysink.SetMarkerChunk(e.(effects).e, 3)
	var batch []effecttest.Credit
	var want []sink.Outcome
	for i := range 20 {
		c := effecttest.Credit{OpID: fmt.Sprintf("op-%02d", i), Account: []string{"a", "b"}[i%2], Amount: int64(i)}
		switch {
		case i == 3 || i == 7:
			want = append(want, sink.Duplicate)
		case i%5 == 4:
			c.Account = "nobody"
			want = append(want, sink.Rejected)
		default:
			want = append(want, sink.Applied)
		}
		batch = append(batch, c)
	}
	_, err := e.Apply(ctx, []effecttest.Credit{batch[3], batch[7]})
	require.NoError(t, err)
	res, err := e.Apply(ctx, batch)
	require.NoError(t, err)
	assert.Equal(t, want, outcomesOf(res))
	assert.Len(t, db.Markers(t), 16)
	assert.Len(t, db.Applied(t), 16)
}

func TestNewEffects(t *testing.T) {
	db := &sql.DB{}
	for _, tc := range []struct {
		name string
		db   *sql.DB
		cfg  mysink.EffectConfig
		is   error
		msg  string
	}{
		{name: "nil db", cfg: mysink.EffectConfig{}, is: sink.ErrConfig, msg: "the db is nil"},
		{name: "table name too long", db: db, cfg: mysink.EffectConfig{Table: strings.Repeat("t", 65)}, is: sink.ErrConfig, msg: "EffectConfig.Table"},
		{name: "NUL in the table name", db: db, cfg: mysink.EffectConfig{Table: "a\x00b"}, is: sink.ErrConfig, msg: "EffectConfig.Table"},
		{name: "horizon shorter than retention", db: db, cfg: mysink.EffectConfig{Horizon: time.Hour, SourceRetention: 2 * time.Hour},
			is: sink.ErrHorizon, msg: "EffectConfig.Horizon"},
		{name: "defaults", db: db},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mysink.NewEffects(tc.db, tc.cfg)
			if tc.is == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.is)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
}

// A table name with a backquote is quoted, never spliced: the sink works on it, and every
// statement names it quoted and carries values only as placeholders.
func TestEffectTableNameQuoted(t *testing.T) {
	ctx := effecttest.Ctx(t)
	db := mytest.New(t)
	name := "mark`ers; DROP TABLE x"
	e, err := mysink.NewEffects(db.DB, mysink.EffectConfig{Table: name})
	require.NoError(t, err)
	require.NoError(t, e.Migrate(ctx))
	require.NoError(t, e.Migrate(ctx), "Migrate is idempotent")
	for _, st := range e.Statements() {
		assert.Contains(t, st, "`mark``ers; DROP TABLE x`", st)
		assert.NotContains(t, st, "'", "values are parameters: %s", st)
	}
	nop := func(_ context.Context, _ *sql.Tx, ops []int) ([]sink.Result, error) { return applied(len(ops)), nil }
	res, err := e.Apply(ctx, []sink.Operation{{ID: "a", Payload: []byte("1")}, {ID: "a", Payload: []byte("1")}}, nop)
	require.NoError(t, err)
	assert.Equal(t, []sink.Outcome{sink.Applied, sink.Duplicate}, outcomesOf(res))
	var n int
	require.NoError(t, db.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM `mark``ers; DROP TABLE x`").Scan(&n))
	assert.Equal(t, 1, n)
}
