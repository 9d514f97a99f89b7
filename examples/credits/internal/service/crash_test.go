package service_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/examples/credits/internal/credit"
	"github.com/streamledger/streamledger/examples/credits/internal/service"
	"github.com/streamledger/streamledger/internal/faults"
	"github.com/streamledger/streamledger/ledger"
)

var errCrash = errors.New("crash injected by the test")

// crashPoint is where TestCrashPoints stops the first consumer, in the batch holding c3.
type crashPoint int

const (
	beforeTx     crashPoint = iota + 1 // before the batch's sink transaction begins
	beforeCommit                       // inside it: every statement ran, not committed
	afterCommit                        // the transaction committed, the sink has not returned
	beforeOffset                       // c3 decided, its offset not committed
	afterBoth                          // c3's offset committed
)

func (p crashPoint) String() string {
	return [...]string{"", "before the sink transaction", "inside it, before its commit", "after its commit",
		"after the sink commit, before the offset commit", "after both commits"}[p]
}

// The crash-point table, point by point, with the real client, the in-process broker and each
// database (Postgres, MySQL). Four credits c1..c4, each to its own account, on one partition; the
// first consumer crashes at the point in the batch that holds c3; a fresh consumer of the same
// group then resumes. Two modes: one credit at a time (each its own transaction, a commit after
// each: the table per operation) and in batches (the credits at hand in one transaction: the points
// inside a batch). At the crash and after the recovery, every operation id is compared with its
// expected effect (marker, entry, balance), and the offsets the broker holds and the decisions of
// the second consumer show what was redelivered and how it was decided.
func TestCrashPoints(t *testing.T) {
	for _, db := range databases {
		for _, mode := range []string{"one at a time", "in a batch"} {
			for _, point := range []crashPoint{beforeTx, beforeCommit, afterCommit, beforeOffset, afterBoth} {
				t.Run(db+"/"+mode+"/"+point.String(), func(t *testing.T) {
					crashAt(t, db, mode == "one at a time", point)
				})
			}
		}
	}
}

var crashOps = []credit.Credit{
	{ID: "c1", Account: "a1", Amount: 10},
	{ID: "c2", Account: "a2", Amount: 20},
	{ID: "c3", Account: "a3", Amount: 30},
	{ID: "c4", Account: "a4", Amount: 40},
}

// armCrash makes cfg crash the consumer at point in the batch holding c3. It records every
// batch the consumer began, as lists of offsets, in batches.
func armCrash(t *testing.T, e *env, cfg *service.Config, point crashPoint, crash func(), batches *[][]int64) {
	var armed atomic.Bool // one partition: its batches run one after another
	cfg.Hooks.BeforeApply = func(ds []service.Delivery) {
		offs := make([]int64, len(ds))
		for i, d := range ds {
			offs[i] = d.Offset
		}
		*batches = append(*batches, offs)
		armed.Store(slices.ContainsFunc(ds, func(d service.Delivery) bool { return d.Credit.ID == "c3" }))
		if armed.Load() && point == beforeTx {
			crash()
		}
	}
	cfg.SinkFaults = func(ctx context.Context, p faults.Point, a faults.Attempt) error {
		switch {
		case !armed.Load():
		case point == beforeCommit && p == faults.BeforeCommit:
			// The markers and the credits are written but not committed. The process dies:
			// its session ends, and the server rolls the transaction back.
			crash()
			// On a worker: report, never FailNow.
			assert.NoError(t, e.db.kill(context.Background(), a.Conn), "the transaction's session %d ended", a.Conn)
			return errCrash
		case point == afterCommit && p == faults.AfterCommit:
			crash()
			return errCrash
		}
		return nil
	}
	cfg.Hooks.Decided = func(d service.Decision) {
		if point == beforeOffset && d.Credit.ID == "c3" {
			crash()
		}
	}
	cfg.Hooks.Committed = func(cs []ledger.Commit) {
		for _, c := range cs {
			if point == afterBoth && c.Offset > 2 {
				crash()
			}
		}
	}
}

func crashAt(t *testing.T, db string, oneAtATime bool, point crashPoint) {
	e := newEnvOn(t, db, 1)
	opening := map[string]int64{"a1": 100, "a2": 100, "a3": 100, "a4": 100}
	e.open(opening)
	e.produce(0, crashOps...)

	cfg := e.config("g")
	if oneAtATime {
		cfg.Workers, cfg.Batch = -1, -1
	} else {
		// Commits on a timer, which seals no batch while the credits at hand are polled.
		cfg.CommitInterval = 200 * time.Millisecond
	}
	var (
		first   *instance
		crashed atomic.Bool
		batches [][]int64
	)
	armCrash(t, e, &cfg, point, func() {
		crashed.Store(true)
		first.svc.Abort()
	}, &batches)
	first = e.prepare("first", cfg)
	first.run(t)
	require.ErrorIs(t, first.wait(t), service.ErrAborted, "the first consumer crashed")
	require.True(t, crashed.Load())

	// The batch holding c3 (offset 2), and what each credit must have left at the crash: the
	// batches before it are durable, it is durable from its commit on, and no later batch has
	// begun (except after both commits, when one may have).
	var crashedIn []int64
	for _, b := range batches {
		if slices.Contains(b, 2) {
			crashedIn = b
		}
	}
	require.NotEmpty(t, crashedIn, "batches %v", batches)
	committed := e.committed("g", 1)[0]
	durable := func(off int64) bool {
		if off < crashedIn[0] {
			return true
		}
		if slices.Contains(crashedIn, off) {
			return point >= afterCommit
		}
		return false
	}
	if point != afterBoth { // then a later batch may have committed too: checked after the recovery
		atCrash := map[string]expect{}
		for off, c := range crashOps {
			atCrash[c.ID] = expect{applied: durable(int64(off)), account: c.Account, amount: c.Amount}
		}
		e.verify("at the crash", opening, atCrash)
		assert.LessOrEqual(t, committed, crashedIn[0], "no offset of the crashed batch committed")
	}
	if !oneAtATime {
		require.Greater(t, len(crashedIn), 1, "c3 in a batch with others: %v", batches)
	}
	if oneAtATime {
		assert.Equal(t, []int64{2}, crashedIn, "c3 alone")
		want := map[crashPoint]int64{beforeTx: 2, beforeCommit: 2, afterCommit: 2, beforeOffset: 2, afterBoth: 3}
		assert.Equal(t, want[point], committed, "offset committed at the crash")
	}

	second := e.start("second", e.config("g"))
	e.waitCommitted("g", 4)
	require.NoError(t, second.stop(t))
	got := second.outcomes()
	require.Len(t, got, int(4-max(committed, 0)), "redelivered from the committed offset: %v", got)
	for k, off := 0, max(committed, 0); off < 4; k, off = k+1, off+1 {
		c := crashOps[off]
		switch {
		case point == afterBoth && off > crashedIn[len(crashedIn)-1]:
			// A later batch may or may not have committed before the crash.
			assert.Contains(t, []string{c.ID + ":applied", c.ID + ":duplicate"}, got[k])
		case durable(off):
			assert.Equal(t, c.ID+":duplicate", got[k], "durable at the crash: redelivered, no second credit")
		default:
			assert.Equal(t, c.ID+":applied", got[k], "not durable at the crash: applied now")
		}
	}
	e.verify("after the recovery", opening, expectAll(true, true, true, true))

	if point == afterBoth {
		// Replays still use the same identity: the group rewound to the start redelivers
		// every credit, and each is a duplicate.
		e.kc.Commit(t, "g", topic, 0, 0, "")
		replay := e.start("replay", e.config("g"))
		e.waitCommitted("g", 4)
		require.NoError(t, replay.stop(t))
		assert.Equal(t, []string{"c1:duplicate", "c2:duplicate", "c3:duplicate", "c4:duplicate"}, replay.outcomes())
		e.verify("after the replay", opening, expectAll(true, true, true, true))
	}
}

func expectAll(applied ...bool) map[string]expect {
	m := map[string]expect{}
	for i, c := range crashOps {
		m[c.ID] = expect{applied: applied[i], account: c.Account, amount: c.Amount}
	}
	return m
}

// The seed's worked example in the table's third row, with the numbers of the seed: balance
// 100, credit e42 of 10, crash before the offset commit, balance stays 110.
func TestWorkedExampleE42(t *testing.T) {
	for _, db := range databases {
		t.Run(db, func(t *testing.T) { workedExampleE42(t, db) })
	}
}

func workedExampleE42(t *testing.T, db string) {
	e := newEnvOn(t, db, 1)
	opening := map[string]int64{"a7": 100}
	e.open(opening)
	e42 := credit.Credit{ID: "e42", Account: "a7", Amount: 10}
	e.produce(0, e42)

	cfg := e.config("g")
	var first *instance
	cfg.Hooks.Decided = func(service.Decision) { first.svc.Abort() }
	first = e.prepare("first", cfg)
	first.run(t)
	require.ErrorIs(t, first.wait(t), service.ErrAborted)
	assert.Equal(t, []string{"e42:applied"}, first.outcomes())
	assert.Equal(t, []int64{-1}, e.committed("g", 1), "no offset committed")
	bal, _, err := e.store.Balance(context.Background(), "a7")
	require.NoError(t, err)
	assert.Equal(t, int64(110), bal)

	second := e.start("second", e.config("g"))
	e.waitCommitted("g", 1)
	require.NoError(t, second.stop(t))
	assert.Equal(t, []string{"e42:duplicate"}, second.outcomes())
	e.verify("after the redelivery", opening, map[string]expect{"e42": {applied: true, account: "a7", amount: 10}})
	bal, _, err = e.store.Balance(context.Background(), "a7")
	require.NoError(t, err)
	assert.Equal(t, int64(110), bal, fmt.Sprintf("balance stays 110 (%d)", bal))
}

// A batch whose connection is lost at its commit (the server terminates the session) is
// retried whole by the effect sink, which recognises its own commit if it landed: every
// credit is applied once, the consumer goes on, and nothing is redelivered.
func TestBatchRetriedWholeAfterConnectionLoss(t *testing.T) {
	for _, db := range databases {
		t.Run(db, func(t *testing.T) { batchRetriedWholeAfterConnectionLoss(t, db) })
	}
}

func batchRetriedWholeAfterConnectionLoss(t *testing.T, db string) {
	e := newEnvOn(t, db, 1)
	opening := map[string]int64{"a1": 100, "a2": 100, "a3": 100, "a4": 100}
	e.open(opening)
	e.produce(0, crashOps...)
	cfg := e.config("g")
	cfg.CommitInterval = 200 * time.Millisecond
	var killed atomic.Bool
	cfg.SinkFaults = func(ctx context.Context, p faults.Point, a faults.Attempt) error {
		if p == faults.BeforeCommit && killed.CompareAndSwap(false, true) {
			assert.NoError(t, e.db.kill(context.Background(), a.Conn))
		}
		return nil
	}
	in := e.start("consumer", cfg)
	e.waitCommitted("g", 4)
	require.NoError(t, in.stop(t))
	require.True(t, killed.Load())
	assert.Equal(t, []string{"c1:applied", "c2:applied", "c3:applied", "c4:applied"}, in.outcomes())
	e.verify("after the retry", opening, expectAll(true, true, true, true))
}
