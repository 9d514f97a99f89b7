package service_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/examples/credits/internal/credit"
	"github.com/streamledger/streamledger/examples/credits/internal/service"
	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/sink/postgres"
)

var errCrash = errors.New("crash injected by the test")

// The seed's crash-point table, point by point, with the real client, the in-process broker
// and Postgres. Four credits c1..c4, each to its own account, on one partition; the first
// consumer crashes at the point while deciding c3 (offset 2); a fresh consumer of the same
// group then resumes. At the crash and after the recovery, every operation id is compared
// with its expected effect (marker, entry, balance), and the offsets the broker holds and
// the decisions of the second consumer show what was redelivered and how it was decided.
func TestCrashPoints(t *testing.T) {
	ops := []credit.Credit{
		{ID: "c1", Account: "a1", Amount: 10},
		{ID: "c2", Account: "a2", Amount: 20},
		{ID: "c3", Account: "a3", Amount: 30},
		{ID: "c4", Account: "a4", Amount: 40},
	}
	opening := map[string]int64{"a1": 100, "a2": 100, "a3": 100, "a4": 100}
	expectAll := func(applied ...bool) map[string]expect {
		m := map[string]expect{}
		for i, c := range ops {
			m[c.ID] = expect{applied: applied[i], account: c.Account, amount: c.Amount}
		}
		return m
	}

	for _, tc := range []struct {
		point string
		// arm makes cfg crash the consumer at the point while it decides c3.
		arm func(t *testing.T, e *env, cfg *service.Config, crash func())
		// the sink's state right after the crash: is c3 applied, and which offset is committed
		c3Durable bool
		committed int64
		// the decisions of the consumer that resumes, in order
		resumed []string
	}{
		{
			point: "before the sink transaction",
			arm: func(t *testing.T, e *env, cfg *service.Config, crash func()) {
				cfg.Hooks.BeforeApply = func(d service.Delivery) {
					if d.Credit.ID == "c3" {
						crash()
					}
				}
			},
			c3Durable: false, committed: 2,
			resumed: []string{"c3:applied", "c4:applied"},
		},
		{
			point: "inside the sink transaction",
			arm: func(t *testing.T, e *env, cfg *service.Config, crash func()) {
				var armed bool
				cfg.Hooks.BeforeApply = func(d service.Delivery) { armed = d.Credit.ID == "c3" }
				cfg.SinkFaults.At = func(ctx context.Context, p postgres.Point, a postgres.Attempt) error {
					if !armed || p != postgres.BeforeCommit {
						return nil
					}
					// The marker and the credit are written but not committed. The process
					// dies: its session ends, and the server rolls the transaction back.
					crash()
					// On the consumer's goroutine: report, never FailNow.
					var killed bool
					err := e.db.Pool.QueryRow(context.Background(), `SELECT pg_terminate_backend($1)`, int32(a.PID)).Scan(&killed)
					assert.NoError(t, err)
					assert.True(t, killed, "the transaction's backend %d terminated", a.PID)
					return errCrash
				}
			},
			c3Durable: false, committed: 2,
			resumed: []string{"c3:applied", "c4:applied"},
		},
		{
			point: "after the sink commit, before the offset commit",
			arm: func(t *testing.T, e *env, cfg *service.Config, crash func()) {
				cfg.Hooks.Decided = func(d service.Decision) {
					if d.Credit.ID == "c3" {
						crash()
					}
				}
			},
			c3Durable: true, committed: 2,
			// redelivered, detected as a duplicate: no second credit
			resumed: []string{"c3:duplicate", "c4:applied"},
		},
		{
			point: "after both commits",
			arm: func(t *testing.T, e *env, cfg *service.Config, crash func()) {
				cfg.Hooks.Committed = func(cs []ledger.Commit) {
					for _, c := range cs {
						if c.Offset > 2 {
							crash()
						}
					}
				}
			},
			c3Durable: true, committed: 3,
			// not redelivered for this position
			resumed: []string{"c4:applied"},
		},
	} {
		t.Run(tc.point, func(t *testing.T) {
			e := newEnv(t, 1)
			e.open(opening)
			e.produce(0, ops...)

			cfg := e.config("g")
			var first *instance
			crashed := false
			tc.arm(t, e, &cfg, func() {
				crashed = true
				first.svc.Abort()
			})
			first = e.prepare("first", cfg)
			first.run(t)
			require.ErrorIs(t, first.wait(t), service.ErrAborted, "the first consumer crashed")
			require.True(t, crashed)

			assert.Equal(t, []int64{tc.committed}, e.committed("g", 1), "offset committed at the crash")
			e.verify("at the crash", opening, expectAll(true, true, tc.c3Durable, false))

			second := e.start("second", e.config("g"))
			e.waitCommitted("g", 4)
			require.NoError(t, second.stop(t))
			assert.Equal(t, tc.resumed, second.outcomes(), "what the resuming consumer was delivered and decided")
			e.verify("after the recovery", opening, expectAll(true, true, true, true))

			if tc.point == "after both commits" {
				// Replays still use the same identity: the group rewound to the start
				// redelivers every credit, and each is a duplicate.
				e.kc.Commit(t, "g", topic, 0, 0, "")
				replay := e.start("replay", e.config("g"))
				e.waitCommitted("g", 4)
				require.NoError(t, replay.stop(t))
				assert.Equal(t, []string{"c1:duplicate", "c2:duplicate", "c3:duplicate", "c4:duplicate"}, replay.outcomes())
				e.verify("after the replay", opening, expectAll(true, true, true, true))
			}
		})
	}
}

// The seed's worked example in the table's third row, with the numbers of the seed: balance
// 100, credit e42 of 10, crash before the offset commit, balance stays 110.
func TestWorkedExampleE42(t *testing.T) {
	e := newEnv(t, 1)
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
