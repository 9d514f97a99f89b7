package mysql_test

import (
	"database/sql"
	"regexp"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/mytest"
	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/mysql"
)

// Names are identifiers, quoted: hostile table, column and attribute names work and inject
// nothing.
func TestIdentifiersAreQuoted(t *testing.T) {
	ctx := testCtx(t)
	db := mytest.New(t)
	hostile := "agg`; DROP TABLE victim; --"
	_, err := db.DB.ExecContext(ctx, "CREATE TABLE victim (id int)")
	require.NoError(t, err)
	s, err := mysql.New(db.DB, mysql.Config{
		Aggregates: sink.AggregateSpec{Table: hostile, Attributes: []string{"Op`er ator"},
			Columns: sink.AggregateColumns{Count: "Event Count"}},
		ProgressTable: "Progress Table",
		States: []sink.StateSpec{{Table: "state`x", Key: []sink.Column{{Name: "id`", Type: sink.Text}},
			ObservedAt: sink.Column{Name: "observed at", Type: sink.Timestamp}, Values: []sink.Column{{Name: "v;", Type: sink.Int64}}}},
	})
	require.NoError(t, err)
	require.NoError(t, s.Migrate(ctx))
	start := sinkfixture.Start()
	end := start.Add(5 * time.Minute)
	k := sink.Key{WindowStart: start, Dimension: "d", DimensionID: "i"}
	require.NoError(t, s.WriteClose(ctx, sink.CloseBatch{Source: sink.TopicPartition{Topic: "t"}, ClosedThrough: end,
		Partials: []sink.Partial{{Key: k, WindowEnd: end, Attrs: map[string]string{"Op`er ator": "x"}, Stats: sinkfixture.Stats(t, 4)}}}))
	got, ok, err := s.Aggregate(ctx, k)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, int64(1), got.Count)
	assert.Equal(t, map[string]string{"Op`er ator": "x"}, got.Attrs)
	assert.True(t, got.Complete)
	require.NoError(t, s.UpsertLatest(ctx, []sink.StateRow{{Table: "state`x", Key: []any{"a"}, ObservedAt: start, Values: []any{int64(7)}}}))
	row, ok, err := s.Latest(ctx, "state`x", "a")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, []any{int64(7)}, row.Values)
	var n int
	require.NoError(t, db.DB.QueryRowContext(ctx, "SELECT count(*) FROM victim").Scan(&n), "the victim table survived")
}

// Keys are compared byte by byte, as in the other sinks: keys that a case- or
// accent-insensitive collation would fold together stay apart.
func TestKeysAreBinary(t *testing.T) {
	ctx := testCtx(t)
	s, _ := newSink(t, nil)
	at := sinkfixture.Start()
	ids := []string{"bus-a", "BUS-A", "bus-á", "bus-a "}
	var rows []sink.StateRow
	for i, id := range ids {
		rows = append(rows, sink.StateRow{Table: sinkfixture.StateTable, Key: []any{id}, ObservedAt: at, Values: []any{id, float64(i), int64(i)}})
	}
	require.NoError(t, s.UpsertLatest(ctx, rows))
	for i, id := range ids {
		got, ok, err := s.Latest(ctx, sinkfixture.StateTable, id)
		require.NoError(t, err)
		require.True(t, ok, "%q", id)
		assert.Equal(t, int64(i), got.Values[2], "%q", id)
	}
}

// A close statement's SET never adds to a stored value: every write must be safe to
// repeat.
func TestNoAccumulatingAssignment(t *testing.T) {
	s, err := mysql.New(&sql.DB{}, mysql.Config{Aggregates: sinkfixture.Aggregates(), States: []sink.StateSpec{sinkfixture.Latest()}})
	require.NoError(t, err)
	plus := regexp.MustCompile(`(?s)ON DUPLICATE KEY UPDATE .*\+`)
	for _, stmt := range s.Statements() {
		assert.False(t, plus.MatchString(stmt), stmt)
	}
	assert.Contains(t, s.Statements(), "INSERT INTO `latest` (`entity_id`, `observed_at`, `label`, `value`, `seq`, `updated_at`) VALUES "+
		"(?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE "+
		"`label` = IF(VALUES(`observed_at`) >= `observed_at`, VALUES(`label`), `label`), "+
		"`value` = IF(VALUES(`observed_at`) >= `observed_at`, VALUES(`value`), `value`), "+
		"`seq` = IF(VALUES(`observed_at`) >= `observed_at`, VALUES(`seq`), `seq`), "+
		"`updated_at` = IF(VALUES(`observed_at`) >= `observed_at`, VALUES(`updated_at`), `updated_at`), "+
		"`observed_at` = IF(VALUES(`observed_at`) >= `observed_at`, VALUES(`observed_at`), `observed_at`)",
		"the guard column is assigned last")
}

func TestConfigIsValidated(t *testing.T) {
	long := "t" + string(make([]byte, 64))
	for name, tc := range map[string]struct {
		cfg  mysql.Config
		want string
	}{
		"progress is partials": {mysql.Config{ProgressTable: "window_aggregates_partials"}, "Config.ProgressTable"},
		"long table name":      {mysql.Config{Aggregates: sink.AggregateSpec{Table: long}}, "longer than MySQL's 64 characters"},
		"negative statement":   {mysql.Config{MaxStatementBytes: -1}, "Config.MaxStatementBytes"},
		"bad quantile":         {mysql.Config{Aggregates: sink.AggregateSpec{Quantile: 2}}, "Config.Aggregates.Quantile"},
		"observed-at type": {mysql.Config{States: []sink.StateSpec{{Table: "s", Key: []sink.Column{{Name: "k"}},
			ObservedAt: sink.Column{Name: "at", Type: sink.Text}}}}, "want sink.Timestamp"},
		"unknown type": {mysql.Config{States: []sink.StateSpec{{Table: "s", Key: []sink.Column{{Name: "k", Type: 99}},
			ObservedAt: sink.Column{Name: "at"}}}}, "Config.States[0]: column \"k\" of state table \"s\" has type ColumnType(99)"},
		"hook":     {mysql.Config{Hooks: []sink.Hook{42}}, "Config.Hooks[0]"},
		"state is": {mysql.Config{States: []sink.StateSpec{{Table: "streamledger_locks", Key: []sink.Column{{Name: "k"}}, ObservedAt: sink.Column{Name: "at"}}}}, "also the Config.LocksTable"},
	} {
		_, err := mysql.New(&sql.DB{}, tc.cfg)
		require.ErrorIs(t, err, sink.ErrConfig, name)
		assert.ErrorContains(t, err, tc.want, name)
	}
	_, err := mysql.New(nil, mysql.Config{})
	assert.ErrorIs(t, err, sink.ErrConfig)
	_, err = mysql.New(&sql.DB{}, mysql.Config{Horizon: time.Hour, SourceRetention: 2 * time.Hour})
	assert.ErrorIs(t, err, sink.ErrHorizon)
	assert.ErrorIs(t, err, sink.ErrConfig)
}

// A permanent failure is typed, not retried, and carries the server's error.
func TestPermanentErrorIsTypedAndNotRetried(t *testing.T) {
	ctx := testCtx(t)
	s, db := newSink(t, nil)
	_, err := db.DB.ExecContext(ctx, "DROP TABLE `latest`")
	require.NoError(t, err)
	err = s.UpsertLatest(ctx, []sink.StateRow{{Table: sinkfixture.StateTable, Key: []any{"v"}, ObservedAt: sinkfixture.Start(), Values: []any{"t", 1.0, int64(1)}}})
	var we *sink.WriteError
	require.ErrorAs(t, err, &we)
	assert.False(t, we.Transient)
	assert.Equal(t, 1, we.Attempts)
	var me *gomysql.MySQLError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, uint16(1146), me.Number, "ER_NO_SUCH_TABLE")
}
