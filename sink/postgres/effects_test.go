package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/faults"
	"github.com/streamledger/streamledger/internal/pgtest"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/postgres"
)

// bank is the effect of seed 004: a balance credit, recorded per operation in ops so that
// each operation's effect can be compared with its marker.
type bank struct {
	db *pgtest.DB
}

func newBank(t *testing.T, db *pgtest.DB, accounts map[string]int64) bank {
	ctx := testCtx(t)
	_, err := db.Pool.Exec(ctx, `CREATE TABLE accounts (id text PRIMARY KEY, balance bigint NOT NULL CHECK (balance >= 0), ops text[] NOT NULL DEFAULT '{}')`)
	require.NoError(t, err)
	for id, b := range accounts {
		_, err := db.Pool.Exec(ctx, "INSERT INTO accounts (id, balance) VALUES ($1, $2)", id, b)
		require.NoError(t, err)
	}
	return bank{db: db}
}

type credit struct {
	OpID    string
	Account string
	Amount  int64
}

func (c credit) op() sink.Operation {
	return sink.Operation{ID: c.OpID, Payload: fmt.Appendf(nil, "%s:%d", c.Account, c.Amount)}
}

// effect credits each operation of batch at the positions given, one statement per
// operation in batch order, and refuses one whose account does not exist. It is the effect
// of the exactly-once lesson: a balance credit, recorded per operation in ops.
func effect(batch []credit) postgres.Effect {
	return func(ctx context.Context, tx pgx.Tx, ops []int) ([]error, error) {
		// Concurrent batches lock their accounts in one order, so that they cannot deadlock.
		accounts := make([]string, len(ops))
		for k, i := range ops {
			accounts[k] = batch[i].Account
		}
		if _, err := tx.Exec(ctx, "SELECT 1 FROM accounts WHERE id = ANY($1) ORDER BY id FOR UPDATE", accounts); err != nil {
			return nil, err
		}
		errs := make([]error, len(ops))
		for k, i := range ops {
			c := batch[i]
			tag, err := tx.Exec(ctx, "UPDATE accounts SET balance = balance + $2, ops = array_append(ops, $3) WHERE id = $1", c.Account, c.Amount, c.OpID)
			if err != nil {
				return nil, err
			}
			if tag.RowsAffected() == 0 {
				errs[k] = fmt.Errorf("%w: account %q", sink.ErrNoEffect, c.Account)
			}
		}
		return errs, nil
	}
}

// apply applies batch in one call.
func apply(ctx context.Context, e *postgres.Effects, batch ...credit) ([]sink.Result, error) {
	ops := make([]sink.Operation, len(batch))
	for i, c := range batch {
		ops[i] = c.op()
	}
	return e.Apply(ctx, ops, effect(batch))
}

// applyOne applies c alone and returns its outcome, or its conflict or refusal as an error.
func applyOne(ctx context.Context, e *postgres.Effects, c credit) (sink.Outcome, error) {
	res, err := apply(ctx, e, c)
	if err != nil {
		return 0, err
	}
	return res[0].Outcome, res[0].Err
}

func (b bank) balance(t *testing.T, id string) int64 {
	var v int64
	require.NoError(t, b.db.Pool.QueryRow(testCtx(t), "SELECT balance FROM accounts WHERE id = $1", id).Scan(&v))
	return v
}

// applied returns how many times each operation's effect is in the accounts.
func (b bank) applied(t *testing.T) map[string]int {
	rows, err := b.db.Pool.Query(testCtx(t), "SELECT unnest(ops) FROM accounts")
	require.NoError(t, err)
	out := map[string]int{}
	var op string
	_, err = pgx.ForEachRow(rows, []any{&op}, func() error { out[op]++; return nil })
	require.NoError(t, err)
	return out
}

// markers returns the stored marker hashes by operation ID.
func (b bank) markers(t *testing.T) map[string][]byte {
	rows, err := b.db.Pool.Query(testCtx(t), "SELECT op_id, payload_hash FROM streamledger_markers")
	require.NoError(t, err)
	out := map[string][]byte{}
	var id string
	var h []byte
	_, err = pgx.ForEachRow(rows, []any{&id, &h}, func() error { out[id] = slices.Clone(h); return nil })
	require.NoError(t, err)
	return out
}

func newEffects(t *testing.T, pool *pgxpool.Pool, db *pgtest.DB, adjust func(*postgres.EffectConfig)) *postgres.Effects {
	cfg := postgres.EffectConfig{Schema: db.Schema, Retry: fastRetry}
	if adjust != nil {
		adjust(&cfg)
	}
	e, err := postgres.NewEffects(pool, cfg)
	require.NoError(t, err)
	require.NoError(t, e.Migrate(testCtx(t)))
	return e
}

func hashOf(c credit) []byte {
	h := c.op().Hash()
	return h[:]
}

func TestEffectOutcomes(t *testing.T) {
	ctx := testCtx(t)
	db := pgtest.New(t)
	b := newBank(t, db, map[string]int64{"a7": 100})
	e := newEffects(t, db.Pool, db, nil)

	c := credit{OpID: "credit-42", Account: "a7", Amount: 10}
	out, err := applyOne(ctx, e, c)
	require.NoError(t, err)
	assert.Equal(t, sink.Applied, out)
	assert.Equal(t, int64(110), b.balance(t, "a7"))

	out, err = applyOne(ctx, e, c)
	require.NoError(t, err)
	assert.Equal(t, sink.Duplicate, out, "same ID and payload: skipped")
	assert.Equal(t, int64(110), b.balance(t, "a7"))

	other := credit{OpID: "credit-42", Account: "a7", Amount: 99}
	out, err = applyOne(ctx, e, other)
	assert.Equal(t, sink.Conflict, out)
	var conflict *sink.ConflictError
	require.ErrorAs(t, err, &conflict, "same ID, different payload")
	assert.Equal(t, "credit-42", conflict.ID)
	assert.Equal(t, hashOf(c), conflict.StoredHash)
	assert.Equal(t, hashOf(other), conflict.GivenHash)
	assert.Equal(t, int64(110), b.balance(t, "a7"), "no effect")
	assert.Equal(t, map[string][]byte{"credit-42": hashOf(c)}, b.markers(t), "the marker is unchanged")
}

// One batch holding every case: each operation gets the result it would get alone, in batch
// order, and a rejection holds back none of the others.
func TestEffectBatchOutcomes(t *testing.T) {
	ctx := testCtx(t)
	db := pgtest.New(t)
	b := newBank(t, db, map[string]int64{"a": 100, "b": 100, "c": 5})
	e := newEffects(t, db.Pool, db, nil)
	old := credit{OpID: "old", Account: "a", Amount: 1}
	_, err := apply(ctx, e, old)
	require.NoError(t, err)

	batch := []credit{
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
	res, err := apply(ctx, e, batch...)
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
	assert.Equal(t, hashOf(old), conflict.StoredHash)
	require.ErrorAs(t, res[6].Err, &conflict)
	assert.Equal(t, hashOf(batch[4]), conflict.StoredHash, "in-batch conflict against the batch's own marker")
	assert.ErrorIs(t, res[3].Err, sink.ErrNoEffect)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, res[9].Err, &pgErr)
	assert.Equal(t, "23514", pgErr.Code, "check violation")
	for _, i := range []int{0, 1, 4, 5, 7, 8, 10, 11, 12} {
		assert.NoError(t, res[i].Err, "operation %d", i)
	}

	assert.Equal(t, map[string][]byte{
		"old": hashOf(old), "n1": hashOf(batch[0]), "n2": hashOf(batch[4]), "u1": hashOf(batch[7]),
		"n3": hashOf(batch[10]), "o1": hashOf(batch[11]), "n4": hashOf(batch[12]),
	}, b.markers(t))
	assert.Equal(t, map[string]int{"old": 1, "n1": 1, "n2": 1, "u1": 1, "n3": 1, "o1": 1, "n4": 1}, b.applied(t), "one effect per marker")
	assert.Equal(t, int64(100+1+10+30), b.balance(t, "a"))
	assert.Equal(t, int64(100+20+3), b.balance(t, "b"))
	assert.Equal(t, int64(5-5+1), b.balance(t, "c"), "the same account's operations in batch order")
	var ops []string
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT ops FROM accounts WHERE id = 'a'").Scan(&ops))
	assert.Equal(t, []string{"old", "n1", "n3"}, ops, "effects in batch order")
}

func TestInvalidOperationsLeaveNoMarker(t *testing.T) {
	ctx := testCtx(t)
	db := pgtest.New(t)
	b := newBank(t, db, map[string]int64{"a7": 5})
	e := newEffects(t, db.Pool, db, nil)
	boom := errors.New("effect refused")

	for _, tc := range []struct {
		name      string
		c         credit
		effect    postgres.Effect
		is        error
		rejection bool // a result, not a failure of the call
	}{
		{name: "no such account: touches no row", c: credit{OpID: "op-1", Account: "nobody", Amount: 10}, is: sink.ErrNoEffect, rejection: true},
		{name: "overdraft: check violation", c: credit{OpID: "op-2", Account: "a7", Amount: -50}, rejection: true},
		{name: "the effect refuses it", c: credit{OpID: "op-3", Account: "a7", Amount: 1}, is: boom, rejection: true,
			effect: func(context.Context, pgx.Tx, []int) ([]error, error) { return []error{boom}, nil }},
		{name: "the effect fails", c: credit{OpID: "op-4", Account: "a7", Amount: 1}, is: boom,
			effect: func(context.Context, pgx.Tx, []int) ([]error, error) { return nil, boom }},
		{name: "the effect miscounts", c: credit{OpID: "op-5", Account: "a7", Amount: 1}, is: sink.ErrInvalid,
			effect: func(context.Context, pgx.Tx, []int) ([]error, error) { return nil, nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eff := tc.effect
			if eff == nil {
				eff = effect([]credit{tc.c})
			}
			res, err := e.Apply(ctx, []sink.Operation{tc.c.op()}, eff)
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
			assert.NotContains(t, b.markers(t), tc.c.OpID, "no success marker for an invalid operation")
		})
	}
	assert.Equal(t, int64(5), b.balance(t, "a7"))
	assert.Empty(t, b.applied(t))

	_, err := e.Apply(ctx, []sink.Operation{{ID: "x"}, {}}, effect(nil))
	assert.ErrorIs(t, err, sink.ErrInvalid)
	_, err = e.Apply(ctx, []sink.Operation{{ID: "x"}}, nil)
	assert.ErrorIs(t, err, sink.ErrInvalid)
	res, err := e.Apply(ctx, nil, effect(nil))
	assert.NoError(t, err)
	assert.Empty(t, res)
}

var errCrash = errors.New("process crashed")

// consumer is a one-partition consumer of credits that applies its log in batches of size
// and commits the offset after each batch's Apply returned: the crash points of the
// exactly-once boundary are around Apply and the commit.
type consumer struct {
	log       []credit
	size      int
	committed int
}

// run processes from the committed offset; crashAfterApply stops after the Apply of the
// batch holding that offset, before committing. It returns at the first error, as a crashed
// process would.
func (c *consumer) run(ctx context.Context, e *postgres.Effects, crashAfterApply int) ([]sink.Outcome, error) {
	var outs []sink.Outcome
	for off := c.committed; off < len(c.log); {
		end := min(off+c.size, len(c.log))
		res, err := apply(ctx, e, c.log[off:end]...)
		if err != nil {
			return outs, err
		}
		for _, r := range res {
			outs = append(outs, r.Outcome)
		}
		if off <= crashAfterApply && crashAfterApply < end {
			return outs, errCrash
		}
		c.committed, off = end, end
	}
	return outs, nil
}

// The crash points per operation (batches of one) and inside a batch (three operations in
// one transaction): at each point every operation's marker and effect are compared with what
// the point leaves, and after the restart with exactly one effect each.
func TestEffectCrashPoints(t *testing.T) {
	for _, size := range []int{1, 3} {
		for _, tc := range []struct {
			name       string
			point      faults.Point // hook point that crashes (0: none)
			terminate  bool         // the server kills the session instead of the hook returning
			afterApply bool         // the consumer crashes after Apply returned, before the offset commit
			afterBoth  bool         // no crash; the partition is replayed from the start afterwards
			durable    bool         // the batch's markers and effects exist at the crash
		}{
			{name: "before the transaction", point: faults.BeforeBegin},
			{name: "inside it, after the markers", point: faults.AfterMarker},
			{name: "inside it, server kills the session", point: faults.AfterMarker, terminate: true},
			{name: "inside it, before commit", point: faults.BeforeCommit},
			{name: "after commit, before Apply returned", point: faults.AfterCommit, durable: true},
			{name: "after Apply returned, before the offset commit", afterApply: true, durable: true},
			{name: "after both commits", afterBoth: true, durable: true},
		} {
			t.Run(fmt.Sprintf("batch of %d/%s", size, tc.name), func(t *testing.T) {
				crashPoint(t, size, tc.point, tc.terminate, tc.afterApply, tc.afterBoth, tc.durable)
			})
		}
	}
}

func crashPoint(t *testing.T, size int, point faults.Point, kill, afterApply, afterBoth, durable bool) {
	ctx := testCtx(t)
	db := pgtest.New(t)
	b := newBank(t, db, map[string]int64{"a7": 100, "a8": 100, "a9": 100})
	log := []credit{{OpID: "e41", Account: "a8", Amount: 1}, {OpID: "e42", Account: "a7", Amount: 10}, {OpID: "e43", Account: "a9", Amount: 100}}
	var armed atomic.Bool
	e := newEffects(t, db.Pool, db, func(c *postgres.EffectConfig) {
		c.Retry = sink.RetryPolicy{MaxAttempts: 1} // a crashed process does not retry
	})
	ctx = faults.With(ctx, func(ctx context.Context, p faults.Point, a faults.Attempt) error {
		if p != point || !armed.CompareAndSwap(true, false) {
			return nil
		}
		if kill {
			terminate(ctx, t, db, a.Conn)
			return nil
		}
		return errCrash
	})
	c := &consumer{log: log, size: size}
	if size == 1 {
		// e41 is applied and committed alone; the crash strikes in e42's batch.
		pre := &consumer{log: log[:1], size: 1}
		_, err := pre.run(ctx, e, -1)
		require.NoError(t, err)
		c.committed = pre.committed
	}
	armed.Store(point != 0)
	crashAt := -1
	if afterApply {
		crashAt = 1
	}
	_, err := c.run(ctx, e, crashAt)
	if afterBoth {
		require.NoError(t, err)
		c.committed = 0 // a replay of the partition, as after an offset reset
	} else {
		require.Error(t, err, "the run crashes")
	}

	// The state at the crash, operation by operation.
	want := map[string][]byte{}
	wantApplied := map[string]int{}
	for i, cr := range log {
		inCrashed := i >= c.committed && i < c.committed+size
		if i < c.committed || (inCrashed && durable) || afterBoth {
			want[cr.OpID] = hashOf(cr)
			wantApplied[cr.OpID] = 1
		}
	}
	assert.Equal(t, want, b.markers(t), "markers at the crash")
	assert.Equal(t, wantApplied, b.applied(t), "effects at the crash")

	// Restart: the broker redelivers from the committed offset.
	outs, err := c.run(ctx, e, -1)
	require.NoError(t, err)
	for k, out := range outs {
		off := len(log) - len(outs) + k
		wantOut := sink.Applied
		if _, ok := want[log[off].OpID]; ok {
			wantOut = sink.Duplicate
		}
		assert.Equal(t, wantOut, out, "%s redelivered", log[off].OpID)
	}
	assert.Equal(t, map[string]int{"e41": 1, "e42": 1, "e43": 1}, b.applied(t), "one effect each")
	assert.Equal(t, int64(110), b.balance(t, "a7"))
	assert.Equal(t, int64(101), b.balance(t, "a8"))
	assert.Equal(t, int64(200), b.balance(t, "a9"))
	assert.Len(t, b.markers(t), 3)
}

// A commit whose acknowledgement is lost is retried; the retry finds the batch's markers
// with its token and returns the results of the attempt that committed, once.
func TestEffectCommitAcknowledgementLost(t *testing.T) {
	ctx := testCtx(t)
	db := pgtest.New(t)
	b := newBank(t, db, map[string]int64{"a7": 100})
	var lost atomic.Bool
	var attempts atomic.Int32
	e := newEffects(t, db.Pool, db, nil)
	ctx = faults.With(ctx, func(ctx context.Context, p faults.Point, a faults.Attempt) error {
		if p == faults.BeforeBegin {
			attempts.Add(1)
		}
		if p == faults.AfterCommit && lost.CompareAndSwap(false, true) {
			terminate(ctx, t, db, a.Conn)
			return &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}
		}
		return nil
	})
	lost.Store(true) // disarmed
	_, err := apply(ctx, e, credit{OpID: "d1", Account: "a7", Amount: 1})
	require.NoError(t, err)
	lost.Store(false)
	batch := []credit{
		{OpID: "e1", Account: "a7", Amount: 10},
		{OpID: "d1", Account: "a7", Amount: 1},
		{OpID: "u1", Account: "nobody", Amount: 10},
		{OpID: "e2", Account: "a7", Amount: 20},
	}
	res, err := apply(ctx, e, batch...)
	require.NoError(t, err)
	assert.Equal(t, int32(3), attempts.Load(), "the lost acknowledgement was retried")
	outcomes := []sink.Outcome{res[0].Outcome, res[1].Outcome, res[2].Outcome, res[3].Outcome}
	assert.Equal(t, []sink.Outcome{sink.Applied, sink.Duplicate, sink.Rejected, sink.Applied}, outcomes,
		"the results of the attempt that committed, not duplicates of itself")
	assert.Equal(t, int64(131), b.balance(t, "a7"))
	assert.Equal(t, map[string]int{"d1": 1, "e1": 1, "e2": 1}, b.applied(t))
}

// A transient failure of the batch (here a serialization failure before its commit) retries
// the batch whole: every operation is applied by the retry, once.
func TestEffectRetryAppliesTheBatchWhole(t *testing.T) {
	ctx := testCtx(t)
	db := pgtest.New(t)
	b := newBank(t, db, map[string]int64{"a": 0, "b": 0})
	var failed atomic.Bool
	var attempts []int
	e := newEffects(t, db.Pool, db, nil)
	ctx = faults.With(ctx, func(ctx context.Context, p faults.Point, a faults.Attempt) error {
		if p == faults.BeforeBegin {
			attempts = append(attempts, a.N)
		}
		if p == faults.BeforeCommit && failed.CompareAndSwap(false, true) {
			return &pgconn.PgError{Code: "40001", Message: "could not serialize access"}
		}
		return nil
	})
	var batch []credit
	for i := range 50 {
		batch = append(batch, credit{OpID: fmt.Sprintf("op-%02d", i), Account: []string{"a", "b"}[i%2], Amount: int64(i)})
	}
	res, err := apply(ctx, e, batch...)
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2}, attempts)
	for i, r := range res {
		assert.Equal(t, sink.Applied, r.Outcome, batch[i].OpID)
	}
	assert.Len(t, b.applied(t), 50)
	assert.Len(t, b.markers(t), 50)
	assert.Equal(t, int64(600+625), b.balance(t, "a")+b.balance(t, "b"))
}

// waitForLockWaiter waits until a statement on schema's tables is blocked on a lock.
func waitForLockWaiter(ctx context.Context, t *testing.T, db *pgtest.DB) {
	t.Helper()
	for {
		var n int
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND position($1 in query) > 0`,
			db.Schema).Scan(&n))
		if n > 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("no writer waited on the marker")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Two connections race the same operation ID, interleaved deterministically: the second
// blocks on the first's uncommitted marker, then skips (first committed) or applies (first
// rolled back). One effect either way.
func TestEffectRaceOnOneID(t *testing.T) {
	for _, firstCommits := range []bool{true, false} {
		t.Run(fmt.Sprintf("first commits %v", firstCommits), func(t *testing.T) {
			ctx := testCtx(t)
			db := pgtest.New(t)
			b := newBank(t, db, map[string]int64{"a7": 100})
			inserted := make(chan struct{})
			first := newEffects(t, db.NewPool(t, nil), db, func(c *postgres.EffectConfig) {
				c.Retry = sink.RetryPolicy{MaxAttempts: 1}
			})
			firstCtx := faults.With(ctx, func(ctx context.Context, p faults.Point, _ faults.Attempt) error {
				switch p {
				case faults.AfterMarker:
					close(inserted)
				case faults.BeforeCommit:
					waitForLockWaiter(ctx, t, db)
					if !firstCommits {
						return errCrash
					}
				}
				return nil
			})
			second := newEffects(t, db.NewPool(t, nil), db, nil)
			c := credit{OpID: "race", Account: "a7", Amount: 10}
			var firstOut sink.Outcome
			var firstErr error
			done := make(chan struct{})
			go func() {
				defer close(done)
				firstOut, firstErr = applyOne(firstCtx, first, c)
			}()
			select { // the first holds its uncommitted marker
			case <-inserted:
			case <-done:
				t.Fatalf("the first Apply ended before inserting its marker: %v", firstErr)
			}
			secondOut, secondErr := applyOne(ctx, second, c)
			<-done
			require.NoError(t, secondErr)
			if firstCommits {
				require.NoError(t, firstErr)
				assert.Equal(t, []sink.Outcome{sink.Applied, sink.Duplicate}, []sink.Outcome{firstOut, secondOut})
			} else {
				require.ErrorIs(t, firstErr, errCrash)
				assert.Equal(t, sink.Applied, secondOut)
			}
			assert.Equal(t, int64(110), b.balance(t, "a7"))
			assert.Equal(t, map[string]int{"race": 1}, b.applied(t))
		})
	}
}

// Many operations, redelivered and raced by two consumers with their own pools, in batches
// of random sizes, with duplicates (also within a batch), conflicting reuses of IDs and
// invalid operations mixed in: every operation is compared with its marker, not just the
// final balances.
func TestEffectPerOperation(t *testing.T) {
	ctx := testCtx(t)
	db := pgtest.New(t)
	accounts := map[string]int64{"a": 1000, "b": 1000, "c": 1000}
	b := newBank(t, db, accounts)
	r := rand.New(rand.NewPCG(42, 4))
	n := 120
	if testing.Short() {
		n = 40
	}
	var log []credit
	valid := map[string]credit{}
	for i := range n {
		c := credit{OpID: fmt.Sprintf("op-%03d", i), Account: []string{"a", "b", "c"}[r.IntN(3)], Amount: int64(1 + r.IntN(50))}
		switch r.IntN(10) {
		case 0:
			c.Account = "closed" // touches no row
		case 1:
			c.Amount = -5000 // overdraft
		default:
			valid[c.OpID] = c
		}
		log = append(log, c)
		if r.IntN(4) == 0 { // the same ID reused for another payload
			log = append(log, credit{OpID: c.OpID, Account: c.Account, Amount: c.Amount + 1})
		}
	}
	workers := make([][]credit, 2)
	for w := range workers {
		// Each worker sees every message, in its own order, some twice.
		perm := r.Perm(len(log))
		for _, i := range perm {
			workers[w] = append(workers[w], log[i])
			if r.IntN(5) == 0 {
				workers[w] = append(workers[w], log[i])
			}
		}
	}
	var mu sync.Mutex
	applied := map[string]credit{}
	var wg sync.WaitGroup
	for w, msgs := range workers {
		e := newEffects(t, db.NewPool(t, nil), db, nil)
		sizes := rand.New(rand.NewPCG(7, uint64(w)))
		wg.Go(func() {
			for len(msgs) > 0 {
				batch := msgs[:min(1+sizes.IntN(25), len(msgs))]
				msgs = msgs[len(batch):]
				res, err := apply(ctx, e, batch...)
				if err != nil {
					t.Errorf("batch of %d: %v", len(batch), err)
					continue
				}
				for i, r := range res {
					c := batch[i]
					var pgErr *pgconn.PgError
					switch {
					case r.Outcome == sink.Applied:
						mu.Lock()
						if prev, dup := applied[c.OpID]; dup {
							t.Errorf("%s applied twice: %v and %v", c.OpID, prev, c)
						}
						applied[c.OpID] = c
						mu.Unlock()
					case r.Outcome == sink.Rejected && !errors.Is(r.Err, sink.ErrNoEffect) && (!errors.As(r.Err, &pgErr) || pgErr.Code != "23514"):
						t.Errorf("%s: unexpected refusal %v", c.OpID, r.Err)
					}
				}
			}
		})
	}
	wg.Wait()

	markers := b.markers(t)
	effects := b.applied(t)
	want := map[string]int64{}
	for id, m := range markers {
		c, ok := applied[id]
		require.True(t, ok, "marker %s without a reported application", id)
		assert.True(t, bytes.Equal(hashOf(c), m), "%s: the marker holds the applied payload", id)
		assert.Equal(t, 1, effects[id], "%s: one effect per marker", id)
		want[c.Account] += c.Amount
	}
	for id := range effects {
		assert.Contains(t, markers, id, "effect %s without a marker", id)
	}
	for id := range applied {
		assert.Contains(t, markers, id)
	}
	for _, c := range log {
		if _, ok := valid[c.OpID]; !ok {
			assert.NotContains(t, markers, c.OpID, "invalid operation %s left a marker", c.OpID)
		} else {
			assert.Contains(t, markers, c.OpID, "valid operation %s was applied", c.OpID)
		}
	}
	for acct, initial := range accounts {
		assert.Equal(t, initial+want[acct], b.balance(t, acct), acct)
	}
}

func TestEffectRetentionHorizon(t *testing.T) {
	ctx := testCtx(t)
	db := pgtest.New(t)
	_, err := postgres.NewEffects(db.Pool, postgres.EffectConfig{Horizon: 7 * 24 * time.Hour, SourceRetention: 30 * 24 * time.Hour})
	require.ErrorIs(t, err, sink.ErrHorizon, "markers must outlive the source's replay horizon")
	_, err = postgres.NewEffects(db.Pool, postgres.EffectConfig{SourceRetention: 8 * 24 * time.Hour})
	require.ErrorIs(t, err, sink.ErrHorizon, "the default horizon (7 days) is shorter than 8 days of retention")
	_, err = postgres.NewEffects(db.Pool, postgres.EffectConfig{Horizon: 30 * 24 * time.Hour, SourceRetention: -1})
	require.ErrorIs(t, err, sink.ErrHorizon, "a source that keeps records forever needs markers kept forever")
	_, err = postgres.NewEffects(db.Pool, postgres.EffectConfig{Horizon: -1, SourceRetention: -1})
	require.NoError(t, err)

	b := newBank(t, db, map[string]int64{"a": 0})
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	e := newEffects(t, db.Pool, db, func(c *postgres.EffectConfig) {
		c.Horizon, c.SourceRetention, c.Clock = 30*24*time.Hour, 30*24*time.Hour, clock
	})
	applyID := func(id string) sink.Outcome {
		out, err := applyOne(ctx, e, credit{OpID: id, Account: "a", Amount: 1})
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
	assert.Equal(t, []string{"young"}, slices.Sorted(maps.Keys(b.markers(t))), "a marker younger than the horizon is never pruned")
	assert.Equal(t, sink.Duplicate, applyID("young"), "the retained marker still deduplicates")

	forever := newEffects(t, db.Pool, db, func(c *postgres.EffectConfig) {
		c.Horizon, c.Clock = -1, func() time.Time { return now.Add(1000 * 24 * time.Hour) }
	})
	n, err = forever.Prune(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "a negative horizon keeps markers forever")
	byDefault := newEffects(t, db.Pool, db, func(c *postgres.EffectConfig) { c.Clock = func() time.Time { return now.Add(1000 * 24 * time.Hour) } })
	n, err = byDefault.Prune(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), n, "the default horizon (7 days) prunes a marker 1000 days old")
}
