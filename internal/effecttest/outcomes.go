package effecttest

import (
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/sink"
)

func outcomes(t *testing.T, a Adapter) {
	ctx := Ctx(t)
	db := a.New(t, map[string]int64{"a7": 100})
	e := db.Effects(t, Config{}, false)

	c := Credit{OpID: "credit-42", Account: "a7", Amount: 10}
	out, err := applyOne(ctx, e, c)
	require.NoError(t, err)
	assert.Equal(t, sink.Applied, out)
	assert.Equal(t, int64(110), db.Balance(t, "a7"))

	out, err = applyOne(ctx, e, c)
	require.NoError(t, err)
	assert.Equal(t, sink.Duplicate, out, "same ID and payload: skipped")
	assert.Equal(t, int64(110), db.Balance(t, "a7"))

	other := Credit{OpID: "credit-42", Account: "a7", Amount: 99}
	out, err = applyOne(ctx, e, other)
	assert.Equal(t, sink.Conflict, out)
	var conflict *sink.ConflictError
	require.ErrorAs(t, err, &conflict, "same ID, different payload")
	assert.Equal(t, "credit-42", conflict.ID)
	assert.Equal(t, c.Hash(), conflict.StoredHash)
	assert.Equal(t, other.Hash(), conflict.GivenHash)
	assert.Equal(t, int64(110), db.Balance(t, "a7"), "no effect")
	assert.Equal(t, map[string][]byte{"credit-42": c.Hash()}, db.Markers(t), "the marker is unchanged")
}

// One batch holding every case: each operation gets the result it would get alone, in batch
// order, and a rejection holds back none of the others.
func batchOutcomes(t *testing.T, a Adapter) {
	ctx := Ctx(t)
	db := a.New(t, map[string]int64{"a": 100, "b": 100, "c": 5})
	e := db.Effects(t, Config{}, false)
	old := Credit{OpID: "old", Account: "a", Amount: 1}
	_, err := e.Apply(ctx, []Credit{old})
	require.NoError(t, err)

	batch := []Credit{
		{OpID: "n1", Account: "a", Amount: 10}, // 0 new
		old,                                    // 1 duplicate of a committed marker
		{OpID: "old", Account: "a", Amount: 2}, // 2 conflict with a committed marker
		{OpID: "u1", Account: "nobody", Amount: 3}, // 3 unknown account: touches no row
		{OpID: "n2", Account: "b", Amount: 20},     // 4 new
		{OpID: "n1", Account: "a", Amount: 10},     // 5 duplicate of 0, in the same batch
		{OpID: "n2", Account: "b", Amount: 21},     // 6 conflict with 4, in the same batch
		{OpID: "u1", Account: "b", Amount: 3},      // 7 the ID of the rejected 3, another payload: applied
		{OpID: "u1", Account: "b", Amount: 3},      // 8 duplicate of 7
		{OpID: "o1", Account: "c", Amount: -50},    // 9 overdraft: a check violation, rejected alone
		{OpID: "n3", Account: "a", Amount: 30},     // 10 new, after the violation
		{OpID: "o1", Account: "c", Amount: -5},     // 11 the ID of the rejected 9: applied
		{OpID: "n4", Account: "c", Amount: 1},      // 12 new, same account as 11, after it
	}
	res, err := e.Apply(ctx, batch)
	require.NoError(t, err)
	outcomes := make([]sink.Outcome, len(res))
	for i, r := range res {
		outcomes[i] = r.Outcome
	}
	assert.Equal(t, []sink.Outcome{
		sink.Applied, sink.Duplicate, sink.Conflict, sink.Rejected, sink.Applied, sink.Duplicate, sink.Conflict,
		sink.Applied, sink.Duplicate, sink.Rejected, sink.Applied, sink.Applied, sink.Applied,
	}, outcomes)
	var conflict *sink.ConflictError
	require.ErrorAs(t, res[2].Err, &conflict)
	assert.Equal(t, old.Hash(), conflict.StoredHash)
	require.ErrorAs(t, res[6].Err, &conflict)
	assert.Equal(t, batch[4].Hash(), conflict.StoredHash, "in-batch conflict against the batch's own marker")
	assert.ErrorIs(t, res[3].Err, sink.ErrNoEffect)
	assert.True(t, a.CheckViolation(res[9].Err), "check violation: %v", res[9].Err)
	for _, i := range []int{0, 1, 4, 5, 7, 8, 10, 11, 12} {
		assert.NoError(t, res[i].Err, "operation %d", i)
	}

	assert.Equal(t, map[string][]byte{
		"old": old.Hash(), "n1": batch[0].Hash(), "n2": batch[4].Hash(), "u1": batch[7].Hash(),
		"n3": batch[10].Hash(), "o1": batch[11].Hash(), "n4": batch[12].Hash(),
	}, db.Markers(t))
	assert.Equal(t, map[string]int{"old": 1, "n1": 1, "n2": 1, "u1": 1, "n3": 1, "o1": 1, "n4": 1}, db.Applied(t), "one effect per marker")
	assert.Equal(t, int64(100+1+10+30), db.Balance(t, "a"))
	assert.Equal(t, int64(100+20+3), db.Balance(t, "b"))
	assert.Equal(t, int64(1), db.Balance(t, "c"), "5, less 5, plus 1: the same account's operations in batch order")
	assert.Equal(t, []string{"old", "n1", "n3"}, db.Ops(t, "a"), "effects in batch order")
}

func invalidOperations(t *testing.T, a Adapter) {
	ctx := Ctx(t)
	db := a.New(t, map[string]int64{"a7": 5})
	e := db.Effects(t, Config{}, false)
	boom := errors.New("effect refused")

	for _, tc := range []struct {
		name      string
		c         Credit
		verdict   Verdict // instead of the credit effect
		is        error
		rejection bool // a result, not a failure of the call
	}{
		{name: "no such account: touches no row", c: Credit{OpID: "op-1", Account: "nobody", Amount: 10}, is: sink.ErrNoEffect, rejection: true},
		{name: "overdraft: check violation", c: Credit{OpID: "op-2", Account: "a7", Amount: -50}, rejection: true},
		{name: "the effect refuses it", c: Credit{OpID: "op-3", Account: "a7", Amount: 1}, is: boom, rejection: true,
			verdict: func([]int) ([]sink.Result, error) { return []sink.Result{{Outcome: sink.Rejected, Err: boom}}, nil }},
		{name: "the effect fails", c: Credit{OpID: "op-4", Account: "a7", Amount: 1}, is: boom,
			verdict: func([]int) ([]sink.Result, error) { return nil, boom }},
		{name: "the effect miscounts", c: Credit{OpID: "op-5", Account: "a7", Amount: 1}, is: sink.ErrInvalid,
			verdict: func([]int) ([]sink.Result, error) { return nil, nil }},
		{name: "the effect decides nothing", c: Credit{OpID: "op-6", Account: "a7", Amount: 1}, is: sink.ErrInvalid,
			verdict: func([]int) ([]sink.Result, error) { return []sink.Result{{}}, nil }},
		{name: "the effect rejects without a reason", c: Credit{OpID: "op-7", Account: "a7", Amount: 1}, is: sink.ErrInvalid,
			verdict: func([]int) ([]sink.Result, error) { return []sink.Result{{Outcome: sink.Rejected}}, nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var res []sink.Result
			var err error
			if tc.verdict == nil {
				res, err = e.Apply(ctx, []Credit{tc.c})
			} else {
				res, err = e.ApplyVerdict(ctx, []sink.Operation{tc.c.Op()}, tc.verdict)
			}
			if tc.rejection {
				require.NoError(t, err)
				assert.Equal(t, sink.Rejected, res[0].Outcome)
				err = res[0].Err
			} else {
				assert.False(t, sink.IsTransient(err))
			}
			require.Error(t, err)
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
			assert.NotContains(t, db.Markers(t), tc.c.OpID, "no success marker for an invalid operation")
		})
	}
	assert.Equal(t, int64(5), db.Balance(t, "a7"))
	assert.Empty(t, db.Applied(t))

	ok := func(ops []int) ([]sink.Result, error) {
		res := make([]sink.Result, len(ops))
		for k := range res {
			res[k].Outcome = sink.Applied
		}
		return res, nil
	}
	_, err := e.ApplyVerdict(ctx, []sink.Operation{{ID: "x"}, {}}, ok)
	assert.ErrorIs(t, err, sink.ErrInvalid)
	_, err = e.ApplyVerdict(ctx, []sink.Operation{{ID: "x"}}, nil)
	assert.ErrorIs(t, err, sink.ErrInvalid)
	res, err := e.ApplyVerdict(ctx, nil, ok)
	assert.NoError(t, err)
	assert.Empty(t, res)
}

func retentionHorizon(t *testing.T, a Adapter) {
	ctx := Ctx(t)
	db := a.New(t, map[string]int64{"a": 0})
	require.ErrorIs(t, db.Check(Config{Horizon: 7 * 24 * time.Hour, SourceRetention: 30 * 24 * time.Hour}), sink.ErrHorizon,
		"markers must outlive the source's replay horizon")
	require.ErrorIs(t, db.Check(Config{SourceRetention: 8 * 24 * time.Hour}), sink.ErrHorizon,
		"the default horizon (7 days) is shorter than 8 days of retention")
	require.ErrorIs(t, db.Check(Config{Horizon: 30 * 24 * time.Hour, SourceRetention: -1}), sink.ErrHorizon,
		"a source that keeps records forever needs markers kept forever")
	require.NoError(t, db.Check(Config{Horizon: -1, SourceRetention: -1}))

	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	e := db.Effects(t, Config{Horizon: 30 * 24 * time.Hour, SourceRetention: 30 * 24 * time.Hour, Clock: func() time.Time { return now }}, false)
	applyID := func(id string) sink.Outcome {
		out, err := applyOne(ctx, e, Credit{OpID: id, Account: "a", Amount: 1})
		require.NoError(t, err)
		return out
	}
	applyID("old")                     // created at day 0
	now = now.Add(20 * 24 * time.Hour) // day 20
	applyID("young")
	now = now.Add(10*24*time.Hour + time.Second) // day 30 + 1s: "old" is past the horizon, "young" is 10 days old

	n, err := e.Prune(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), n)
	assert.Equal(t, []string{"young"}, slices.Sorted(maps.Keys(db.Markers(t))), "a marker younger than the horizon is never pruned")
	assert.Equal(t, sink.Duplicate, applyID("young"), "the retained marker still deduplicates")

	later := func() time.Time { return now.Add(1000 * 24 * time.Hour) }
	forever := db.Effects(t, Config{Horizon: -1, Clock: later}, false)
	n, err = forever.Prune(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "a negative horizon keeps markers forever")
	byDefault := db.Effects(t, Config{Clock: later}, false)
	n, err = byDefault.Prune(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), n, "the default horizon (7 days) prunes a marker 1000 days old")
}
