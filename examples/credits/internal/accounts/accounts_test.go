package accounts_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/examples/credits/internal/accounts"
	"github.com/streamledger/streamledger/examples/credits/internal/credit"
	"github.com/streamledger/streamledger/internal/pgtest"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/postgres"
)

var t0 = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

func setup(t *testing.T) (*accounts.Store, *postgres.Effects) {
	t.Helper()
	db := pgtest.New(t)
	ctx := context.Background()
	clock := func() time.Time { return t0 }
	st, err := accounts.New(db.Pool, accounts.Config{Schema: db.Schema, Clock: clock})
	require.NoError(t, err)
	require.NoError(t, st.Migrate(ctx))
	require.NoError(t, st.Migrate(ctx), "Migrate is idempotent")
	fx, err := postgres.NewEffects(db.Pool, postgres.EffectConfig{Schema: db.Schema, Clock: clock})
	require.NoError(t, err)
	require.NoError(t, fx.Migrate(ctx))
	return st, fx
}

func apply(st *accounts.Store, fx *postgres.Effects, c credit.Credit) (sink.Outcome, error) {
	return fx.Apply(context.Background(), c.Operation(), func(ctx context.Context, tx pgx.Tx) (pgconn.CommandTag, error) {
		return st.Credit(ctx, tx, c)
	})
}

// Every outcome of the credit effect inside the effect sink, compared per operation id:
// marker, entries and balance.
func TestCreditEffect(t *testing.T) {
	st, fx := setup(t)
	ctx := context.Background()
	for acct, bal := range map[string]int64{"a7": 100, "full": math.MaxInt64 - 5} {
		created, err := st.Open(ctx, acct, bal)
		require.NoError(t, err)
		require.True(t, created)
	}
	created, err := st.Open(ctx, "a7", 999)
	require.NoError(t, err)
	assert.False(t, created, "an existing account is left as it is")

	e42 := credit.Credit{ID: "e42", Account: "a7", Amount: 10}
	out, err := apply(st, fx, e42)
	require.NoError(t, err)
	assert.Equal(t, sink.Applied, out)

	out, err = apply(st, fx, e42)
	require.NoError(t, err)
	assert.Equal(t, sink.Duplicate, out, "the same credit again")

	_, err = apply(st, fx, credit.Credit{ID: "e42", Account: "a7", Amount: 20})
	var conflict *sink.ConflictError
	require.ErrorAs(t, err, &conflict, "another credit under e42")

	_, err = apply(st, fx, credit.Credit{ID: "u1", Account: "nobody", Amount: 10})
	require.ErrorIs(t, err, sink.ErrNoEffect, "unknown account")

	_, err = apply(st, fx, credit.Credit{ID: "o1", Account: "full", Amount: 10})
	var rejected *accounts.RejectedError
	require.ErrorAs(t, err, &rejected, "bigint overflow")
	assert.Equal(t, accounts.ClassRejected, dlq.ErrorClass(err))
	assert.False(t, postgres.IsTransient(err))

	bal, ok, err := st.Balance(ctx, "a7")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, int64(110), bal)
	_, ok, err = st.Balance(ctx, "nobody")
	require.NoError(t, err)
	assert.False(t, ok)

	bals, err := st.Balances(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"a7": 110, "full": math.MaxInt64 - 5}, bals)
	entries, err := st.Entries(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string][]accounts.Entry{"e42": {{OpID: "e42", Account: "a7", Amount: 10, AppliedAt: t0}}}, entries)
	markers, err := st.Markers(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]time.Time{"e42": t0}, markers, "no marker for the unknown account, nor for the refused credit")
}

func TestNewRejectsNilPool(t *testing.T) {
	_, err := accounts.New(nil, accounts.Config{})
	require.ErrorContains(t, err, "nil pool")
}
