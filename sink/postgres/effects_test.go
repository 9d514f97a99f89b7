package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/effecttest"
	"github.com/streamledger/streamledger/internal/pgtest"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/postgres"
)

// The effect sink's conformance suite, on Postgres.
func TestEffects(t *testing.T) {
	effecttest.Run(t, effecttest.Adapter{
		New:       newBank,
		Transient: &pgconn.PgError{Code: "40001", Message: "could not serialize access"},
		ConnLost:  &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"},
		CheckViolation: func(err error) bool {
			var pgErr *pgconn.PgError
			return errors.As(err, &pgErr) && pgErr.Code == "23514"
		},
	})
}

// bank is the effect suite's database: accounts whose balance must not go below zero, each
// with the operations credited to it, in order.
type bank struct {
	db *pgtest.DB
}

func newBank(t *testing.T, accounts map[string]int64) effecttest.DB {
	ctx := testCtx(t)
	db := pgtest.New(t)
	_, err := db.Pool.Exec(ctx, `CREATE TABLE accounts (id text PRIMARY KEY, balance bigint NOT NULL CHECK (balance >= 0), ops text[] NOT NULL DEFAULT '{}')`)
	require.NoError(t, err)
	for id, b := range accounts {
		_, err := db.Pool.Exec(ctx, "INSERT INTO accounts (id, balance) VALUES ($1, $2)", id, b)
		require.NoError(t, err)
	}
	return bank{db: db}
}

func (b bank) config(c effecttest.Config) postgres.EffectConfig {
	cfg := postgres.EffectConfig{Schema: b.db.Schema, Horizon: c.Horizon, SourceRetention: c.SourceRetention, Retry: c.Retry, Clock: c.Clock}
	if cfg.Retry == (sink.RetryPolicy{}) {
		cfg.Retry = fastRetry
	}
	return cfg
}

func (b bank) Check(c effecttest.Config) error {
	_, err := postgres.NewEffects(b.db.Pool, b.config(c))
	return err
}

func (b bank) Effects(t *testing.T, c effecttest.Config, ownPool bool) effecttest.Sink {
	pool := b.db.Pool
	if ownPool {
		pool = b.db.NewPool(t, nil)
	}
	e, err := postgres.NewEffects(pool, b.config(c))
	require.NoError(t, err)
	require.NoError(t, e.Migrate(testCtx(t)))
	return effects{e}
}

func (b bank) Balance(t *testing.T, id string) int64 {
	var v int64
	require.NoError(t, b.db.Pool.QueryRow(testCtx(t), "SELECT balance FROM accounts WHERE id = $1", id).Scan(&v))
	return v
}

func (b bank) Applied(t *testing.T) map[string]int {
	rows, err := b.db.Pool.Query(testCtx(t), "SELECT unnest(ops) FROM accounts")
	require.NoError(t, err)
	out := map[string]int{}
	var op string
	_, err = pgx.ForEachRow(rows, []any{&op}, func() error { out[op]++; return nil })
	require.NoError(t, err)
	return out
}

func (b bank) Ops(t *testing.T, account string) []string {
	var ops []string
	require.NoError(t, b.db.Pool.QueryRow(testCtx(t), "SELECT ops FROM accounts WHERE id = $1", account).Scan(&ops))
	return ops
}

func (b bank) Markers(t *testing.T) map[string][]byte {
	rows, err := b.db.Pool.Query(testCtx(t), "SELECT op_id, payload_hash FROM streamledger_markers")
	require.NoError(t, err)
	out := map[string][]byte{}
	var id string
	var h []byte
	_, err = pgx.ForEachRow(rows, []any{&id, &h}, func() error { out[id] = slices.Clone(h); return nil })
	require.NoError(t, err)
	return out
}

func (b bank) Terminate(ctx context.Context, t *testing.T, conn int64) {
	terminate(ctx, t, b.db, conn)
}

// LockWaiters counts the statements on the database's tables that wait for a lock.
func (b bank) LockWaiters(ctx context.Context, t *testing.T) int {
	var n int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND position($1 in query) > 0`,
		b.db.Schema).Scan(&n))
	return n
}

// effects is postgres.Effects with the suite's credit effect.
type effects struct{ e *postgres.Effects }

func (e effects) Apply(ctx context.Context, batch []effecttest.Credit) ([]sink.Result, error) {
	return e.e.Apply(ctx, effecttest.Operations(batch), creditEffect(batch))
}

func (e effects) ApplyVerdict(ctx context.Context, ops []sink.Operation, v effecttest.Verdict) ([]sink.Result, error) {
	var eff postgres.Effect
	if v != nil {
		eff = func(_ context.Context, _ pgx.Tx, ops []int) ([]sink.Result, error) { return v(ops) }
	}
	return e.e.Apply(ctx, ops, eff)
}

func (e effects) Prune(ctx context.Context) (int64, error) { return e.e.Prune(ctx) }

// creditEffect credits each operation of batch at the positions given, one statement per
// operation in batch order, and refuses one whose account does not exist: a balance credit,
// recorded per operation in ops.
func creditEffect(batch []effecttest.Credit) postgres.Effect {
	return func(ctx context.Context, tx pgx.Tx, ops []int) ([]sink.Result, error) {
		// Concurrent batches lock their accounts in one order, so that they cannot deadlock.
		accounts := make([]string, len(ops))
		for k, i := range ops {
			accounts[k] = batch[i].Account
		}
		if _, err := tx.Exec(ctx, "SELECT 1 FROM accounts WHERE id = ANY($1) ORDER BY id FOR UPDATE", accounts); err != nil {
			return nil, err
		}
		res := make([]sink.Result, len(ops))
		for k, i := range ops {
			c := batch[i]
			tag, err := tx.Exec(ctx, "UPDATE accounts SET balance = balance + $2, ops = array_append(ops, $3) WHERE id = $1", c.Account, c.Amount, c.OpID)
			if err != nil {
				return nil, err
			}
			res[k] = sink.Result{Outcome: sink.Applied}
			if tag.RowsAffected() == 0 {
				res[k] = sink.Result{Outcome: sink.Rejected, Err: fmt.Errorf("%w: account %q", sink.ErrNoEffect, c.Account)}
			}
		}
		return res, nil
	}
}
