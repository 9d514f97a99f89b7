package accounts_test

import (
	"context"
	"database/sql"
	"errors"
	"maps"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/examples/credits/internal/accounts"
	"github.com/streamledger/streamledger/examples/credits/internal/credit"
	"github.com/streamledger/streamledger/sink"
)

var t0 = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

func setup(t *testing.T, b backend) accounts.Store {
	t.Helper()
	st, _ := b.open(t, accounts.Config{Clock: func() time.Time { return t0 }})
	return st
}

// applyBatch applies cs in one batch and returns each credit's result.
func applyBatch(t *testing.T, st accounts.Store, cs ...credit.Credit) []sink.Result {
	t.Helper()
	res, err := st.Apply(context.Background(), cs, nil)
	require.NoError(t, err)
	return res
}

// apply applies c alone and returns its outcome, or its conflict or refusal as an error.
func apply(t *testing.T, st accounts.Store, c credit.Credit) (sink.Outcome, error) {
	r := applyBatch(t, st, c)[0]
	return r.Outcome, r.Err
}

// Every outcome of the credit effect inside the effect sink, compared per operation id:
// marker, entries and balance.
func TestCreditEffect(t *testing.T) { eachBackend(t, testCreditEffect) }

func testCreditEffect(t *testing.T, b backend) {
	st := setup(t, b)
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
	out, err := apply(t, st, e42)
	require.NoError(t, err)
	assert.Equal(t, sink.Applied, out)

	out, err = apply(t, st, e42)
	require.NoError(t, err)
	assert.Equal(t, sink.Duplicate, out, "the same credit again")

	_, err = apply(t, st, credit.Credit{ID: "e42", Account: "a7", Amount: 20})
	var conflict *sink.ConflictError
	require.ErrorAs(t, err, &conflict, "another credit under e42")

	_, err = apply(t, st, credit.Credit{ID: "u1", Account: "nobody", Amount: 10})
	require.ErrorIs(t, err, sink.ErrNoEffect, "unknown account")

	out, err = apply(t, st, credit.Credit{ID: "o1", Account: "full", Amount: 10})
	assert.Equal(t, sink.Rejected, out, "bigint overflow")
	err = accounts.Refused(credit.Credit{ID: "o1", Account: "full", Amount: 10}, err)
	var rejected *accounts.RejectedError
	require.ErrorAs(t, err, &rejected, "bigint overflow")
	assert.Equal(t, accounts.ClassRejected, dlq.ErrorClass(err))
	assert.Nil(t, accounts.Refused(credit.Credit{}, sink.ErrNoEffect), "not a data error")

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

// A batch through the set-based effect: entries in batch order, one UPDATE per account, an
// unknown account and a refusal of check rejected alone, and a balance overflow rejected
// alone while the rest of the batch applies.
func TestCreditsBatch(t *testing.T) { eachBackend(t, testCreditsBatch) }

func testCreditsBatch(t *testing.T, b backend) {
	st := setup(t, b)
	ctx := context.Background()
	for acct, bal := range map[string]int64{"a": 0, "b": 100, "full": math.MaxInt64 - 5} {
		_, err := st.Open(ctx, acct, bal)
		require.NoError(t, err)
	}
	cs := []credit.Credit{
		{ID: "c1", Account: "a", Amount: 1},
		{ID: "c2", Account: "b", Amount: 2},
		{ID: "c3", Account: "a", Amount: 3},
		{ID: "u1", Account: "ghost", Amount: 4},
		{ID: "o1", Account: "full", Amount: 10},
		{ID: "c4", Account: "full", Amount: 5},
		{ID: "h1", Account: "a", Amount: 6},
		{ID: "c5", Account: "a", Amount: 7},
	}
	tooOld := errors.New("refused by check")
	res, err := st.Apply(ctx, cs, func(i int) error {
		if cs[i].ID == "h1" {
			return tooOld
		}
		return nil
	})
	require.NoError(t, err)
	outcomes := make([]sink.Outcome, len(res))
	for i, r := range res {
		outcomes[i] = r.Outcome
	}
	assert.Equal(t, []sink.Outcome{sink.Applied, sink.Applied, sink.Applied, sink.Rejected, sink.Rejected, sink.Applied, sink.Rejected, sink.Applied}, outcomes)
	assert.ErrorIs(t, res[3].Err, sink.ErrNoEffect)
	assert.ErrorAs(t, accounts.Refused(cs[4], res[4].Err), new(*accounts.RejectedError), "the overflow, alone")
	assert.ErrorIs(t, res[6].Err, tooOld)

	bals, err := st.Balances(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"a": 11, "b": 102, "full": math.MaxInt64}, bals)
	entries, err := st.Entries(ctx)
	require.NoError(t, err)
	assert.Len(t, entries, 5)
	rows, err := st.EntriesOf(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, []string{"c1", "c3", "c5"}, rows, "entries in batch order")
	markers, err := st.Markers(ctx)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"c1", "c2", "c3", "c4", "c5"}, slices.Collect(maps.Keys(markers)))
}

func TestNewRejectsNilPool(t *testing.T) {
	_, err := accounts.NewPostgres(nil, accounts.Config{})
	require.ErrorContains(t, err, "nil pool")
	_, err = accounts.NewMySQL(nil, accounts.Config{})
	require.ErrorContains(t, err, "nil db")
	_, err = accounts.NewMySQL(&sql.DB{}, accounts.Config{Schema: "credits"})
	require.ErrorContains(t, err, "Schema")
}
