package effecttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/faults"
	"github.com/streamledger/streamledger/sink"
)

// Two connections race the same operation ID, interleaved deterministically: the second
// blocks on the first's uncommitted marker, then skips (first committed) or applies (first
// rolled back). One effect either way.
func raceOnOneID(t *testing.T, a Adapter) {
	for _, firstCommits := range []bool{true, false} {
		t.Run(fmt.Sprintf("first commits %v", firstCommits), func(t *testing.T) {
			ctx := Ctx(t)
			db := a.New(t, map[string]int64{"a7": 100})
			inserted := make(chan struct{})
			first := db.Effects(t, Config{Retry: sink.RetryPolicy{MaxAttempts: 1}}, true)
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
			second := db.Effects(t, Config{}, true)
			c := Credit{OpID: "race", Account: "a7", Amount: 10}
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
			assert.Equal(t, int64(110), db.Balance(t, "a7"))
			assert.Equal(t, map[string]int{"race": 1}, db.Applied(t))
		})
	}
}

// waitForLockWaiter waits until a statement on db's tables waits for a lock.
func waitForLockWaiter(ctx context.Context, t *testing.T, db DB) {
	t.Helper()
	for db.LockWaiters(ctx, t) == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("no writer waited on the marker")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Many operations, redelivered and raced by two consumers with their own pools, in batches
// of random sizes, with duplicates (also within a batch), conflicting reuses of IDs and
// invalid operations mixed in: every operation is compared with its marker, not just the
// final balances.
func perOperation(t *testing.T, a Adapter) {
	ctx := Ctx(t)
	accounts := map[string]int64{"a": 1000, "b": 1000, "c": 1000}
	db := a.New(t, accounts)
	r := rand.New(rand.NewPCG(42, 4))
	n := 120
	if testing.Short() {
		n = 40
	}
	var log []Credit
	valid := map[string]Credit{}
	for i := range n {
		c := Credit{OpID: fmt.Sprintf("op-%03d", i), Account: []string{"a", "b", "c"}[r.IntN(3)], Amount: int64(1 + r.IntN(50))}
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
			log = append(log, Credit{OpID: c.OpID, Account: c.Account, Amount: c.Amount + 1})
		}
	}
	workers := make([][]Credit, 2)
	for w := range workers {
		// Each worker sees every message, in its own order, some twice.
		for _, i := range r.Perm(len(log)) {
			workers[w] = append(workers[w], log[i])
			if r.IntN(5) == 0 {
				workers[w] = append(workers[w], log[i])
			}
		}
	}
	var mu sync.Mutex
	applied := map[string]Credit{}
	var wg sync.WaitGroup
	for w, msgs := range workers {
		e := db.Effects(t, Config{}, true)
		sizes := rand.New(rand.NewPCG(7, uint64(w)))
		wg.Go(func() {
			for len(msgs) > 0 {
				batch := msgs[:min(1+sizes.IntN(25), len(msgs))]
				msgs = msgs[len(batch):]
				res, err := e.Apply(ctx, batch)
				if err != nil {
					t.Errorf("batch of %d: %v", len(batch), err)
					continue
				}
				for i, r := range res {
					c := batch[i]
					switch {
					case r.Outcome == sink.Applied:
						mu.Lock()
						if prev, dup := applied[c.OpID]; dup {
							t.Errorf("%s applied twice: %v and %v", c.OpID, prev, c)
						}
						applied[c.OpID] = c
						mu.Unlock()
					case r.Outcome == sink.Rejected && !errors.Is(r.Err, sink.ErrNoEffect) && !a.CheckViolation(r.Err):
						t.Errorf("%s: unexpected refusal %v", c.OpID, r.Err)
					}
				}
			}
		})
	}
	wg.Wait()
	checkPerOperation(t, db, accounts, log, valid, applied)
}

// checkPerOperation compares every marker with the operation reported applied and with the
// effects in the accounts.
func checkPerOperation(t *testing.T, db DB, accounts map[string]int64, log []Credit, valid, applied map[string]Credit) {
	markers := db.Markers(t)
	effects := db.Applied(t)
	want := map[string]int64{}
	for id, m := range markers {
		c, ok := applied[id]
		require.True(t, ok, "marker %s without a reported application", id)
		assert.True(t, bytes.Equal(c.Hash(), m), "%s: the marker holds the applied payload", id)
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
		assert.Equal(t, initial+want[acct], db.Balance(t, acct), acct)
	}
}
