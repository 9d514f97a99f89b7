package mysql_test

import (
	"context"
	"database/sql"
	"sync"
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

// Migrate runs again, and from several processes at once, without harm; an attribute added
// to the spec later becomes a column; a schema newer than the build is refused.
func TestMigrate(t *testing.T) {
	ctx := testCtx(t)
	db := mytest.New(t)
	newOn := func(attrs ...string) *mysql.Sink {
		agg := sinkfixture.Aggregates()
		agg.Attributes = attrs
		s, err := mysql.New(db.Open(t), mysql.Config{Aggregates: agg, States: sinkfixture.States(), Clock: sinkfixture.Now})
		require.NoError(t, err)
		return s
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = newOn("owner").Migrate(ctx) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	s := newOn("owner", "colour")
	require.NoError(t, s.Migrate(ctx))
	require.NoError(t, s.Migrate(ctx), "again")
	start := sinkfixture.Start()
	k := sink.Key{WindowStart: start, Dimension: "line", DimensionID: "1"}
	require.NoError(t, s.WriteClose(ctx, sink.CloseBatch{Source: sink.TopicPartition{Topic: "t"}, ClosedThrough: start.Add(300e9),
		Partials: []sink.Partial{{Key: k, WindowEnd: start.Add(300e9), Attrs: map[string]string{"colour": "red"}, Stats: sinkfixture.Stats(t, 1)}}}))
	got, ok, err := s.Aggregate(ctx, k)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, map[string]string{"colour": "red"}, got.Attrs)

	_, err = db.DB.ExecContext(ctx, "UPDATE `streamledger_migrations` SET `version` = 99 WHERE `object` = 'aggregates:aggregates'")
	require.NoError(t, err)
	assert.ErrorIs(t, s.Migrate(ctx), mysql.ErrSchemaTooNew)
}

// A state spec without types names a table created elsewhere: Migrate leaves it alone, and
// the sink writes and reads it, values converted by the table's column types.
func TestUntypedStateTable(t *testing.T) {
	ctx := testCtx(t)
	db := mytest.New(t)
	_, err := db.DB.ExecContext(ctx, "CREATE TABLE `mine` (`k` VARCHAR(20) PRIMARY KEY, `at` DATETIME(6) NOT NULL, "+
		"`name` VARCHAR(20), `n` INT, `x` DOUBLE, `ok` BOOLEAN, `seen` DATETIME(6), `raw` BLOB)")
	require.NoError(t, err)
	spec := sink.StateSpec{Table: "mine", Key: []sink.Column{{Name: "k"}}, ObservedAt: sink.Column{Name: "at"},
		Values: []sink.Column{{Name: "name"}, {Name: "n", Type: sink.Int32}, {Name: "x"}, {Name: "ok", Type: sink.Bool}, {Name: "seen"}, {Name: "raw"}}}
	s, err := mysql.New(db.DB, mysql.Config{States: []sink.StateSpec{spec}})
	require.NoError(t, err)
	require.NoError(t, s.Migrate(ctx))
	at := sinkfixture.Start()
	row := sink.StateRow{Table: "mine", Key: []any{"a"}, ObservedAt: at, Values: []any{"n", int32(3), 1.5, true, at.Add(1500), []byte{0, 1}}}
	require.NoError(t, s.UpsertLatest(ctx, []sink.StateRow{row}))
	got, ok, err := s.Latest(ctx, "mine", "a")
	require.NoError(t, err)
	require.True(t, ok)
	want := row
	want.Values = []any{"n", int32(3), 1.5, true, at.Add(1000), []byte{0, 1}}
	assert.Equal(t, want, got, "values in their columns' Go types, times at sink.Precision")
}

// The readiness view holds the merged rows with complete as the sink reads it.
func TestReadinessView(t *testing.T) {
	ctx := testCtx(t)
	s, db := newSink(t, nil)
	b := closeBatch(t, 0, 1, 2)
	require.NoError(t, s.WriteClose(ctx, b))
	complete := func() (bool, string) {
		var c bool
		var through string
		require.NoError(t, db.DB.QueryRowContext(ctx, "SELECT `complete`, `complete_through` FROM `aggregates_status`").Scan(&c, &through))
		return c, through
	}
	c, through := complete()
	assert.True(t, c)
	assert.Equal(t, "2026-03-02 07:05:00.000000", through)
	require.NoError(t, s.WriteClose(ctx, sink.CloseBatch{Source: sink.TopicPartition{Topic: sinkfixture.Topic, Partition: 1}}))
	var n int
	require.NoError(t, db.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM `aggregates_status` WHERE `complete` = FALSE AND `complete_through` IS NULL").Scan(&n))
	assert.Equal(t, 1, n, "a registered partition that closed nothing makes the row incomplete")
	got, ok, err := s.Aggregate(ctx, b.Partials[0].Key)
	require.NoError(t, err)
	require.True(t, ok)
	assert.False(t, got.Complete)
}

// A DSN that names no database leaves DATABASE() NULL: Migrate, of the sink and of the
// effect sink, says so with an error wrapping sink.ErrConfig, and does not report a lock
// that nobody holds.
func TestMigrateWithoutDatabase(t *testing.T) {
	ctx := testCtx(t)
	db := mytest.New(t)
	cfg, err := gomysql.ParseDSN(db.DSN)
	require.NoError(t, err)
	cfg.DBName = ""
	conn, err := gomysql.NewConnector(cfg)
	require.NoError(t, err)
	h := sql.OpenDB(conn)
	t.Cleanup(func() { _ = h.Close() })
	s, err := mysql.New(h, mysql.Config{})
	require.NoError(t, err)
	fx, err := mysql.NewEffects(h, mysql.EffectConfig{})
	require.NoError(t, err)
	for name, migrate := range map[string]func(context.Context) error{"sink": s.Migrate, "effects": fx.Migrate} {
		err := migrate(ctx)
		require.ErrorIs(t, err, sink.ErrConfig, name)
		assert.Contains(t, err.Error(), "the DSN names no database", name)
		assert.NotContains(t, err.Error(), "held", name)
	}
}

// A migration lock that another session holds is reported as held, after the wait that
// Migrate's context leaves (the whole seconds before its deadline, at most a minute).
func TestMigrateLockHeld(t *testing.T) {
	ctx := testCtx(t)
	db := mytest.New(t)
	holder, err := db.DB.Conn(ctx)
	require.NoError(t, err)
	defer holder.Close()
	var got int
	require.NoError(t, holder.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", "streamledger_migrate:"+db.Name).Scan(&got))
	require.Equal(t, 1, got)
	s, err := mysql.New(db.Open(t), mysql.Config{})
	require.NoError(t, err)
	short, cancel := context.WithTimeout(ctx, 1900*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = s.Migrate(short)
	require.Error(t, err)
	assert.NotErrorIs(t, err, sink.ErrConfig)
	assert.Contains(t, err.Error(), "another migration held it for 1s")
	assert.GreaterOrEqual(t, time.Since(start), time.Second, "it waited for the lock")

	_, err = holder.ExecContext(ctx, "DO RELEASE_LOCK(?)", "streamledger_migrate:"+db.Name)
	require.NoError(t, err)
	require.NoError(t, s.Migrate(ctx), "once the lock is free")
}
