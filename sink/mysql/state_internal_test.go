package mysql

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/faults"
	"github.com/streamledger/streamledger/internal/mytest"
	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/sink"
)

// The guarded upsert itself, without the collapse of a call's rows: one statement that holds
// the same key twice applies its rows in order, each against what the one before left, so
// that the newer row stays whatever the order, and of two rows with the same time the later
// one.
func TestUpsertStatementWithAKeyTwice(t *testing.T) {
	ctx := context.Background()
	db := mytest.New(t)
	s, err := New(db.DB, Config{Aggregates: sinkfixture.Aggregates(), States: sinkfixture.States(), Clock: sinkfixture.Now})
	require.NoError(t, err)
	require.NoError(t, s.Migrate(ctx))
	st := s.states[sinkfixture.StateTable]
	at := sinkfixture.Start()
	row := func(id string, d time.Duration, label string, seq int64) sink.StateRow {
		return sink.StateRow{Table: sinkfixture.StateTable, Key: []any{id}, ObservedAt: at.Add(d), Values: []any{label, float64(seq), seq}}
	}
	write := func(rows ...sink.StateRow) {
		t.Helper()
		require.NoError(t, attemptTx(ctx, db.DB, faults.Attempt{Op: opUpsertLatest, N: 1}, func(ctx context.Context, tx *sql.Tx) error {
			return st.write(ctx, tx, defaultStatementBytes, rows, timeArg(sinkfixture.Now()))
		}))
	}
	latest := func(id string) sink.StateRow {
		t.Helper()
		got, ok, err := s.Latest(ctx, sinkfixture.StateTable, id)
		require.NoError(t, err)
		require.True(t, ok, id)
		return got
	}
	for _, tc := range []struct {
		name string
		rows []sink.StateRow
		want sink.StateRow
	}{
		{"newer then older", []sink.StateRow{row("a", time.Minute, "new", 2), row("a", 0, "old", 1)}, row("a", time.Minute, "new", 2)},
		{"older then newer", []sink.StateRow{row("b", 0, "old", 1), row("b", time.Minute, "new", 2)}, row("b", time.Minute, "new", 2)},
		{"equal times: the later row", []sink.StateRow{row("c", 0, "first", 1), row("c", 0, "second", 2)}, row("c", 0, "second", 2)},
		{"three rows, newest in the middle", []sink.StateRow{row("d", 0, "x", 1), row("d", 2*time.Minute, "y", 2), row("d", time.Minute, "z", 3)}, row("d", 2*time.Minute, "y", 2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			write(tc.rows...)
			assert.Equal(t, tc.want, latest(tc.want.Key[0].(string)))
			// Against a stored row: an older pair leaves it, a newer one replaces it.
			write(row(tc.want.Key[0].(string), -time.Hour, "older", 8), row(tc.want.Key[0].(string), -time.Minute, "older", 9))
			assert.Equal(t, tc.want, latest(tc.want.Key[0].(string)))
		})
	}
	var updated string
	require.NoError(t, db.DB.QueryRowContext(ctx, "SELECT `updated_at` FROM `latest` WHERE `entity_id` = 'a'").Scan(&updated))
	assert.Equal(t, "2026-03-02 09:00:00.000000", updated, "updated_at, in UTC, from the clock")
}
