package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/effecttest"
	"github.com/streamledger/streamledger/internal/mytest"
	"github.com/streamledger/streamledger/sink"
	mysink "github.com/streamledger/streamledger/sink/mysql"
)

// The effect sink's conformance suite, on MySQL or MariaDB.
func TestEffects(t *testing.T) {
	effecttest.Run(t, effecttest.Adapter{
		New:       newBank,
		Transient: &mysql.MySQLError{Number: 1213, Message: "Deadlock found when trying to get lock"},
		ConnLost:  mysql.ErrInvalidConn,
		CheckViolation: func(err error) bool {
			var me *mysql.MySQLError
			return errors.As(err, &me) && (me.Number == 4025 || me.Number == 3819) // MariaDB, MySQL 8
		},
	})
}

// effectsRetry keeps retry tests quick while still backing off.
var effectsRetry = sink.RetryPolicy{MaxAttempts: 5, InitialBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond}

// bank is the effect suite's database: accounts whose balance must not go below zero, and
// the operations credited to each, in order. Every credit also counts itself on its account,
// so that a credit of zero changes its row: MySQL counts unchanged rows as unaffected.
type bank struct {
	db *mytest.DB
}

func newBank(t *testing.T, accounts map[string]int64) effecttest.DB {
	ctx := effecttest.Ctx(t)
	db := mytest.New(t)
	for _, st := range []string{
		"CREATE TABLE accounts (id VARCHAR(64) PRIMARY KEY, balance BIGINT NOT NULL, credits INT NOT NULL DEFAULT 0, " +
			"CONSTRAINT balance_not_negative CHECK (balance >= 0)) ENGINE=InnoDB",
		"CREATE TABLE account_ops (seq BIGINT AUTO_INCREMENT PRIMARY KEY, account VARCHAR(64) NOT NULL, op_id VARCHAR(255) NOT NULL) ENGINE=InnoDB",
	} {
		_, err := db.DB.ExecContext(ctx, st)
		require.NoError(t, err)
	}
	for id, b := range accounts {
		_, err := db.DB.ExecContext(ctx, "INSERT INTO accounts (id, balance) VALUES (?, ?)", id, b)
		require.NoError(t, err)
	}
	return bank{db: db}
}

func (b bank) config(c effecttest.Config) mysink.EffectConfig {
	cfg := mysink.EffectConfig{Horizon: c.Horizon, SourceRetention: c.SourceRetention, Retry: c.Retry, Clock: c.Clock}
	if cfg.Retry == (sink.RetryPolicy{}) {
		cfg.Retry = effectsRetry
	}
	return cfg
}

func (b bank) Check(c effecttest.Config) error {
	_, err := mysink.NewEffects(b.db.DB, b.config(c))
	return err
}

func (b bank) Effects(t *testing.T, c effecttest.Config, ownPool bool) effecttest.Sink {
	db := b.db.DB
	if ownPool {
		db = b.db.Open(t)
	}
	e, err := mysink.NewEffects(db, b.config(c))
	require.NoError(t, err)
	require.NoError(t, e.Migrate(effecttest.Ctx(t)))
	return effects{e}
}

func (b bank) Balance(t *testing.T, id string) int64 {
	var v int64
	require.NoError(t, b.db.DB.QueryRowContext(effecttest.Ctx(t), "SELECT balance FROM accounts WHERE id = ?", id).Scan(&v))
	return v
}

func (b bank) Applied(t *testing.T) map[string]int {
	out := map[string]int{}
	b.each(t, "SELECT op_id, COUNT(*) FROM account_ops GROUP BY op_id", nil, func(rows *sql.Rows) error {
		var id string
		var n int
		err := rows.Scan(&id, &n)
		out[id] = n
		return err
	})
	return out
}

func (b bank) Ops(t *testing.T, account string) []string {
	var out []string
	b.each(t, "SELECT op_id FROM account_ops WHERE account = ? ORDER BY seq", []any{account}, func(rows *sql.Rows) error {
		var id string
		err := rows.Scan(&id)
		out = append(out, id)
		return err
	})
	return out
}

func (b bank) Markers(t *testing.T) map[string][]byte {
	out := map[string][]byte{}
	b.each(t, "SELECT op_id, payload_hash FROM streamledger_markers", nil, func(rows *sql.Rows) error {
		var id string
		var h []byte
		err := rows.Scan(&id, &h)
		out[id] = h
		return err
	})
	return out
}

// each runs query and calls scan on every row.
func (b bank) each(t *testing.T, query string, args []any, scan func(*sql.Rows) error) {
	t.Helper()
	rows, err := b.db.DB.QueryContext(effecttest.Ctx(t), query, args...)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		require.NoError(t, scan(rows))
	}
	require.NoError(t, rows.Err())
}

func (b bank) Terminate(ctx context.Context, t *testing.T, conn int64) {
	t.Helper()
	_, err := b.db.DB.ExecContext(ctx, fmt.Sprintf("KILL %d", conn))
	require.NoError(t, err, "kill connection %d", conn)
}

// LockWaiters counts the statements on the database's tables that wait for a lock. InnoDB
// refreshes information_schema.INNODB_TRX only when it was not read for 100 ms, so a caller
// that polls faster would read the same stale rows forever: it waits that long first.
func (b bank) LockWaiters(ctx context.Context, t *testing.T) int {
	time.Sleep(110 * time.Millisecond)
	var n int
	require.NoError(t, b.db.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.INNODB_TRX t "+
		"JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id WHERE t.trx_state = 'LOCK WAIT' AND p.DB = ?",
		b.db.Name).Scan(&n))
	return n
}

// effects is mysql.Effects with the suite's credit effect.
type effects struct{ e *mysink.Effects }

func (e effects) Apply(ctx context.Context, batch []effecttest.Credit) ([]sink.Result, error) {
	return e.e.Apply(ctx, effecttest.Operations(batch), creditEffect(batch))
}

func (e effects) ApplyVerdict(ctx context.Context, ops []sink.Operation, v effecttest.Verdict) ([]sink.Result, error) {
	var eff mysink.Effect
	if v != nil {
		eff = func(_ context.Context, _ *sql.Tx, ops []int) ([]sink.Result, error) { return v(ops) }
	}
	return e.e.Apply(ctx, ops, eff)
}

func (e effects) Prune(ctx context.Context) (int64, error) { return e.e.Prune(ctx) }

// creditEffect credits each operation of batch at the positions given, one statement per
// operation in batch order, logs it on its account, and refuses one whose account does not
// exist.
func creditEffect(batch []effecttest.Credit) mysink.Effect {
	return func(ctx context.Context, tx *sql.Tx, ops []int) ([]sink.Result, error) {
		// Concurrent batches lock their accounts in one order, so that they cannot deadlock.
		accounts := make([]any, len(ops))
		for k, i := range ops {
			accounts[k] = batch[i].Account
		}
		// FORCE INDEX: a locking read that scanned the table would wait for every account
		// locked by another batch, not only for these.
		lock := "SELECT id FROM accounts FORCE INDEX (PRIMARY) WHERE id IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(ops)), ", ") + ") ORDER BY id FOR UPDATE"
		rows, err := tx.QueryContext(ctx, lock, accounts...)
		if err != nil {
			return nil, err
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
		res := make([]sink.Result, len(ops))
		for k, i := range ops {
			c := batch[i]
			r, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = balance + ?, credits = credits + 1 WHERE id = ?", c.Amount, c.Account)
			if err != nil {
				return nil, err
			}
			if n, err := r.RowsAffected(); err != nil || n == 0 {
				res[k] = sink.Result{Outcome: sink.Rejected, Err: fmt.Errorf("%w: account %q", sink.ErrNoEffect, c.Account)}
				continue
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO account_ops (account, op_id) VALUES (?, ?)", c.Account, c.OpID); err != nil {
				return nil, err
			}
			res[k] = sink.Result{Outcome: sink.Applied}
		}
		return res, nil
	}
}
