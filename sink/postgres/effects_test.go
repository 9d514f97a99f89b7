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

func (c credit) effect() postgres.Effect {
	return func(ctx context.Context, tx pgx.Tx) (pgconn.CommandTag, error) {
		return tx.Exec(ctx, "UPDATE accounts SET balance = balance + $2, ops = array_append(ops, $3) WHERE id = $1", c.Account, c.Amount, c.OpID)
	}
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
	out, err := e.Apply(ctx, c.op(), c.effect())
	require.NoError(t, err)
	assert.Equal(t, sink.Applied, out)
	assert.Equal(t, int64(110), b.balance(t, "a7"))

	out, err = e.Apply(ctx, c.op(), c.effect())
	require.NoError(t, err)
	assert.Equal(t, sink.Duplicate, out, "same ID and payload: skipped")
	assert.Equal(t, int64(110), b.balance(t, "a7"))

	other := credit{OpID: "credit-42", Account: "a7", Amount: 99}
	_, err = e.Apply(ctx, other.op(), other.effect())
	var conflict *sink.ConflictError
	require.ErrorAs(t, err, &conflict, "same ID, different payload")
	assert.Equal(t, "credit-42", conflict.ID)
	assert.Equal(t, hashOf(c), conflict.StoredHash)
	assert.Equal(t, hashOf(other), conflict.GivenHash)
	assert.False(t, sink.IsTransient(err))
	assert.Equal(t, int64(110), b.balance(t, "a7"), "no effect")
	assert.Equal(t, map[string][]byte{"credit-42": hashOf(c)}, b.markers(t), "the marker is unchanged")
}

func TestInvalidOperationsLeaveNoMarker(t *testing.T) {
	ctx := testCtx(t)
	db := pgtest.New(t)
	b := newBank(t, db, map[string]int64{"a7": 5})
	e := newEffects(t, db.Pool, db, nil)
	boom := errors.New("effect refused")

	for _, tc := range []struct {
		name   string
		c      credit
		effect postgres.Effect
		is     error
	}{
		{name: "no such account: touches no row", c: credit{OpID: "op-1", Account: "nobody", Amount: 10}, is: sink.ErrNoEffect},
		{name: "overdraft: check violation", c: credit{OpID: "op-2", Account: "a7", Amount: -50}},
		{name: "effect returns an error", c: credit{OpID: "op-3", Account: "a7", Amount: 1},
			effect: func(context.Context, pgx.Tx) (pgconn.CommandTag, error) { return pgconn.CommandTag{}, boom }, is: boom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eff := tc.effect
			if eff == nil {
				eff = tc.c.effect()
			}
			_, err := e.Apply(ctx, tc.c.op(), eff)
			require.Error(t, err)
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
			assert.NotContains(t, b.markers(t), tc.c.OpID, "no success marker for an invalid operation")
		})
	}
	assert.Equal(t, int64(5), b.balance(t, "a7"))
	assert.Empty(t, b.applied(t))

	_, err := e.Apply(ctx, sink.Operation{}, credit{}.effect())
	assert.ErrorIs(t, err, sink.ErrInvalid)
	_, err = e.Apply(ctx, sink.Operation{ID: "x"}, nil)
	assert.ErrorIs(t, err, sink.ErrInvalid)
}

var errCrash = errors.New("process crashed")

// consumer is a one-partition consumer of credits with an offset it commits after the sink
// returns: the crash points of seed 004 are around Apply and the commit.
type consumer struct {
	log       []credit
	committed int
}

// run processes from the committed offset; crashAfterApply stops before committing the
// offset of that message. It returns at the first error, as a crashed process would.
func (c *consumer) run(ctx context.Context, e *postgres.Effects, crashAfterApply int) ([]sink.Outcome, error) {
	var outs []sink.Outcome
	for off := c.committed; off < len(c.log); off++ {
		out, err := e.Apply(ctx, c.log[off].op(), c.log[off].effect())
		if err != nil {
			return outs, err
		}
		outs = append(outs, out)
		if off == crashAfterApply {
			return outs, errCrash
		}
		c.committed = off + 1
	}
	return outs, nil
}

func TestEffectCrashPoints(t *testing.T) {
	for _, tc := range []struct {
		name       string
		point      postgres.Point // hook point that crashes (0: none)
		terminate  bool           // the server kills the session instead of the hook returning
		afterApply bool           // the consumer crashes after Apply returned, before the offset commit
		afterBoth  bool           // no crash; the partition is replayed from the start afterwards
		durable    bool           // marker and effect exist at the crash
		secondOut  sink.Outcome
	}{
		{name: "before the transaction", point: postgres.BeforeBegin, secondOut: sink.Applied},
		{name: "inside it, after the marker", point: postgres.AfterMarker, secondOut: sink.Applied},
		{name: "inside it, server kills the session", point: postgres.AfterMarker, terminate: true, secondOut: sink.Applied},
		{name: "inside it, before commit", point: postgres.BeforeCommit, secondOut: sink.Applied},
		{name: "after commit, before the offset commit", afterApply: true, durable: true, secondOut: sink.Duplicate},
		{name: "after both commits", afterBoth: true, durable: true, secondOut: sink.Duplicate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			db := pgtest.New(t)
			b := newBank(t, db, map[string]int64{"a7": 100})
			var crash atomic.Bool
			crash.Store(tc.point != 0)
			e := newEffects(t, db.Pool, db, func(c *postgres.EffectConfig) {
				c.Retry = sink.RetryPolicy{MaxAttempts: 1} // a crashed process does not retry
				c.Faults.At = func(ctx context.Context, p postgres.Point, a postgres.Attempt) error {
					if p != tc.point || !crash.CompareAndSwap(true, false) {
						return nil
					}
					if tc.terminate {
						terminate(ctx, t, db, a.PID)
						return nil
					}
					return errCrash
				}
			})
			c := &consumer{log: []credit{{OpID: "e42", Account: "a7", Amount: 10}}}
			crashAt := -1
			if tc.afterApply {
				crashAt = 0
			}
			_, err := c.run(ctx, e, crashAt)
			if !tc.afterBoth {
				require.Error(t, err, "the first run crashes")
			} else {
				require.NoError(t, err)
				c.committed = 0 // a replay of the partition, as after an offset reset
			}

			// The state at the crash, per the seed's table.
			if tc.durable {
				assert.Equal(t, int64(110), b.balance(t, "a7"))
				assert.Equal(t, map[string][]byte{"e42": hashOf(c.log[0])}, b.markers(t))
			} else {
				assert.Equal(t, int64(100), b.balance(t, "a7"), "no effect")
				assert.Empty(t, b.markers(t), "no marker")
			}

			// Restart: the broker redelivers from the committed offset.
			outs, err := c.run(ctx, e, -1)
			require.NoError(t, err)
			assert.Equal(t, []sink.Outcome{tc.secondOut}, outs)
			assert.Equal(t, int64(110), b.balance(t, "a7"), "one credit")
			assert.Equal(t, map[string]int{"e42": 1}, b.applied(t))
			assert.Equal(t, map[string][]byte{"e42": hashOf(c.log[0])}, b.markers(t))
		})
	}
}

// A commit whose acknowledgement is lost is retried; the retry finds this call's own marker
// and reports it applied, once.
func TestEffectCommitAcknowledgementLost(t *testing.T) {
	ctx := testCtx(t)
	db := pgtest.New(t)
	b := newBank(t, db, map[string]int64{"a7": 100})
	var lost atomic.Bool
	e := newEffects(t, db.Pool, db, func(c *postgres.EffectConfig) {
		c.Faults.At = func(ctx context.Context, p postgres.Point, a postgres.Attempt) error {
			if p == postgres.AfterCommit && lost.CompareAndSwap(false, true) {
				terminate(ctx, t, db, a.PID)
				return &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}
			}
			return nil
		}
	})
	c := credit{OpID: "e1", Account: "a7", Amount: 10}
	out, err := e.Apply(ctx, c.op(), c.effect())
	require.NoError(t, err)
	assert.Equal(t, sink.Applied, out)
	assert.Equal(t, int64(110), b.balance(t, "a7"))
	assert.Equal(t, map[string]int{"e1": 1}, b.applied(t))
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
				c.Faults.At = func(ctx context.Context, p postgres.Point, _ postgres.Attempt) error {
					switch p {
					case postgres.AfterMarker:
						close(inserted)
					case postgres.BeforeCommit:
						waitForLockWaiter(ctx, t, db)
						if !firstCommits {
							return errCrash
						}
					}
					return nil
				}
			})
			second := newEffects(t, db.NewPool(t, nil), db, nil)
			c := credit{OpID: "race", Account: "a7", Amount: 10}
			var firstOut sink.Outcome
			var firstErr error
			done := make(chan struct{})
			go func() {
				defer close(done)
				firstOut, firstErr = first.Apply(ctx, c.op(), c.effect())
			}()
			select { // the first holds its uncommitted marker
			case <-inserted:
			case <-done:
				t.Fatalf("the first Apply ended before inserting its marker: %v", firstErr)
			}
			secondOut, secondErr := second.Apply(ctx, c.op(), c.effect())
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

// Many operations, redelivered and raced by two consumers with their own pools, with
// duplicates, conflicting reuses of IDs and invalid operations mixed in: every operation is
// compared with its marker, not just the final balances.
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
	for _, msgs := range workers {
		e := newEffects(t, db.NewPool(t, nil), db, nil)
		wg.Go(func() {
			for _, c := range msgs {
				out, err := e.Apply(ctx, c.op(), c.effect())
				if err == nil && out == sink.Applied {
					mu.Lock()
					if prev, dup := applied[c.OpID]; dup {
						t.Errorf("%s applied twice: %v and %v", c.OpID, prev, c)
					}
					applied[c.OpID] = c
					mu.Unlock()
				}
				var conflict *sink.ConflictError
				if err != nil && !errors.As(err, &conflict) && !errors.Is(err, sink.ErrNoEffect) {
					var pgErr *pgconn.PgError
					if !errors.As(err, &pgErr) || pgErr.Code != "23514" {
						t.Errorf("%s: unexpected error %v", c.OpID, err)
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
	_, err = postgres.NewEffects(db.Pool, postgres.EffectConfig{Horizon: -time.Hour})
	require.ErrorIs(t, err, sink.ErrInvalid)

	b := newBank(t, db, map[string]int64{"a": 0})
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	e := newEffects(t, db.Pool, db, func(c *postgres.EffectConfig) {
		c.Horizon, c.SourceRetention, c.Clock = 30*24*time.Hour, 30*24*time.Hour, clock
	})
	apply := func(id string) sink.Outcome {
		c := credit{OpID: id, Account: "a", Amount: 1}
		out, err := e.Apply(ctx, c.op(), c.effect())
		require.NoError(t, err)
		return out
	}
	apply("old")                       // created at day 0
	now = now.Add(20 * 24 * time.Hour) // day 20
	apply("young")
	now = now.Add(10*24*time.Hour + time.Second) // day 30 + 1s: "old" is past the horizon, "young" is 10 days old

	n, err := e.Prune(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), n)
	assert.Equal(t, []string{"young"}, slices.Sorted(maps.Keys(b.markers(t))), "a marker younger than the horizon is never pruned")
	assert.Equal(t, sink.Duplicate, apply("young"), "the retained marker still deduplicates")

	forever := newEffects(t, db.Pool, db, func(c *postgres.EffectConfig) { c.Clock = func() time.Time { return now.Add(1000 * 24 * time.Hour) } })
	n, err = forever.Prune(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "a zero horizon keeps markers forever")
}
