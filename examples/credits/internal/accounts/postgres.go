package accounts

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamledger/streamledger/examples/credits/internal/credit"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/postgres"
)

// Postgres is the [Store] on Postgres, with postgres.Effects as its effect sink. It is safe
// for concurrent use.
type Postgres struct {
	pool    *pgxpool.Pool
	effects *postgres.Effects
	clock   func() time.Time

	schema, accounts, entries, markers string

	lock, credit string
}

// NewPostgres returns the Store on pool. It does not touch the database; see
// [Postgres.Migrate].
func NewPostgres(pool *pgxpool.Pool, cfg Config) (*Postgres, error) {
	if pool == nil {
		return nil, errors.New("accounts: nil pool")
	}
	if cfg.Schema == "" {
		cfg.Schema = "public"
	}
	cfg = cfg.withDefaults()
	fx, err := postgres.NewEffects(pool, postgres.EffectConfig{
		Schema: cfg.Schema, Table: cfg.Markers, Horizon: cfg.Horizon, SourceRetention: cfg.SourceRetention,
		Retry: cfg.Retry, Clock: cfg.Clock, Rand: cfg.Rand,
	})
	if err != nil {
		return nil, fmt.Errorf("accounts: effect sink: %w", err)
	}
	s := &Postgres{
		pool:     pool,
		effects:  fx,
		clock:    cfg.Clock,
		schema:   cfg.Schema,
		accounts: pgx.Identifier{cfg.Schema, "accounts"}.Sanitize(),
		entries:  pgx.Identifier{cfg.Schema, "account_entries"}.Sanitize(),
		markers:  pgx.Identifier{cfg.Schema, cfg.Markers}.Sanitize(),
	}
	s.lock = fmt.Sprintf(`SELECT 1 FROM %s WHERE account_id = ANY($1::text[]) ORDER BY account_id FOR UPDATE`, s.accounts)
	s.credit = fmt.Sprintf(`WITH input AS (SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[]) WITH ORDINALITY AS t(op_id, account_id, amount, n)), `+
		`totals AS (SELECT account_id, sum(amount) AS total FROM input GROUP BY account_id), `+
		`credited AS (UPDATE %s a SET balance = a.balance + t.total FROM totals t WHERE a.account_id = t.account_id RETURNING a.account_id) `+
		`INSERT INTO %s (op_id, account_id, amount, applied_at) `+
		`SELECT i.op_id, i.account_id, i.amount, $4 FROM input i JOIN credited c ON c.account_id = i.account_id ORDER BY i.n `+
		`RETURNING op_id`, s.accounts, s.entries)
	return s, nil
}

// Migrate creates the schema, the tables and the marker table if they do not exist.
// Concurrent calls are serialized by an advisory lock.
func (s *Postgres) Migrate(ctx context.Context) error {
	if err := s.migrateTables(ctx); err != nil {
		return err
	}
	return s.effects.Migrate(ctx)
}

// Apply applies cs through the effect sink in one transaction with [Postgres.Effect].
func (s *Postgres) Apply(ctx context.Context, cs []credit.Credit, check func(i int) error) ([]sink.Result, error) {
	return s.effects.Apply(ctx, operations(cs), s.Effect(cs, check))
}

// Prune deletes the markers older than the horizon.
func (s *Postgres) Prune(ctx context.Context) (int64, error) { return s.effects.Prune(ctx) }

func (s *Postgres) migrateTables(ctx context.Context) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, "credits-example:"+s.schema); err != nil {
			return fmt.Errorf("accounts: migrate: lock: %w", err)
		}
		for _, st := range []string{
			`CREATE SCHEMA IF NOT EXISTS ` + pgx.Identifier{s.schema}.Sanitize(),
			`CREATE TABLE IF NOT EXISTS ` + s.accounts + ` (account_id text PRIMARY KEY, balance bigint NOT NULL)`,
			`CREATE TABLE IF NOT EXISTS ` + s.entries + ` (entry_id bigserial PRIMARY KEY, op_id text NOT NULL, ` +
				`account_id text NOT NULL, amount bigint NOT NULL, applied_at timestamptz NOT NULL)`,
			`CREATE INDEX IF NOT EXISTS account_entries_op_id ON ` + s.entries + ` (op_id)`,
		} {
			if _, err := tx.Exec(ctx, st); err != nil {
				return fmt.Errorf("accounts: migrate: %w", err)
			}
		}
		return nil
	})
}

// Open creates account with an opening balance. An account that exists is left as it is;
// created reports which happened.
func (s *Postgres) Open(ctx context.Context, account string, balance int64) (created bool, err error) {
	tag, err := s.pool.Exec(ctx, `INSERT INTO `+s.accounts+` (account_id, balance) VALUES ($1, $2) ON CONFLICT (account_id) DO NOTHING`, account, balance)
	if err != nil {
		return false, fmt.Errorf("accounts: open %q: %w", account, err)
	}
	return tag.RowsAffected() == 1, nil
}

// Credits is the effect of a batch of credits with distinct IDs, for
// [postgres.Effects.Apply]: in tx, it locks their accounts in the order of their IDs (so that
// concurrent batches cannot deadlock on them), adds each account's credits to its balance with
// one UPDATE, and writes one entry per credit, in the order of cs. It returns, per credit,
// whether its account exists: a credit to an unknown account writes nothing. Amounts are
// positive (credit.Validate), so a balance that the sum leaves within bigint never left it
// in between: the one UPDATE per account equals applying the credits one by one. A sum that
// overflows fails the statement with SQLSTATE 22003, and the sink then applies each credit
// alone.
//
// [postgres.Effects.Apply]: https://pkg.go.dev/github.com/streamledger/streamledger/sink/postgres#Effects.Apply
func (s *Postgres) Credits(ctx context.Context, tx pgx.Tx, cs []credit.Credit) ([]bool, error) {
	ids, accts, amounts := make([]string, len(cs)), make([]string, len(cs)), make([]int64, len(cs))
	pos := make(map[string]int, len(cs))
	for i, c := range cs {
		ids[i], accts[i], amounts[i] = c.ID, c.Account, c.Amount
		pos[c.ID] = i
	}
	var b pgx.Batch
	b.Queue(s.lock, accts)
	b.Queue(s.credit, ids, accts, amounts, s.clock().UTC())
	br := tx.SendBatch(ctx, &b)
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return nil, fmt.Errorf("accounts: lock accounts: %w", err)
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, fmt.Errorf("accounts: credit: %w", err)
	}
	written := make([]bool, len(cs))
	var id string
	_, err = pgx.ForEachRow(rows, []any{&id}, func() error {
		written[pos[id]] = true
		return nil
	})
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("accounts: credit: %w", err)
	}
	return written, nil
}

// Effect returns the effect of the batch cs for [postgres.Effects.Apply]: [Postgres.Credits] of
// the accepted credits, each refused with [sink.ErrNoEffect] when its account does not exist.
// check, if not nil, runs first on each accepted credit (by its position in cs) and refuses
// those it returns an error for, which then write nothing.
//
// [postgres.Effects.Apply]: https://pkg.go.dev/github.com/streamledger/streamledger/sink/postgres#Effects.Apply
func (s *Postgres) Effect(cs []credit.Credit, check func(i int) error) postgres.Effect {
	return func(ctx context.Context, tx pgx.Tx, ops []int) ([]sink.Result, error) {
		return effect(cs, ops, check, func(batch []credit.Credit) ([]bool, error) { return s.Credits(ctx, tx, batch) })
	}
}

// Balance returns the balance of account; ok is false when it does not exist.
func (s *Postgres) Balance(ctx context.Context, account string) (balance int64, ok bool, err error) {
	err = s.pool.QueryRow(ctx, `SELECT balance FROM `+s.accounts+` WHERE account_id = $1`, account).Scan(&balance)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("accounts: balance of %q: %w", account, err)
	}
	return balance, true, nil
}

// Balances returns every account's balance.
func (s *Postgres) Balances(ctx context.Context) (map[string]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT account_id, balance FROM `+s.accounts)
	if err != nil {
		return nil, fmt.Errorf("accounts: balances: %w", err)
	}
	out := map[string]int64{}
	var (
		id  string
		bal int64
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &bal}, func() error {
		out[id] = bal
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("accounts: balances: %w", err)
	}
	return out, nil
}

// Entries returns the entries of every operation id, in the order they were written.
func (s *Postgres) Entries(ctx context.Context) (map[string][]Entry, error) {
	rows, err := s.pool.Query(ctx, `SELECT op_id, account_id, amount, applied_at FROM `+s.entries+` ORDER BY entry_id`)
	if err != nil {
		return nil, fmt.Errorf("accounts: entries: %w", err)
	}
	out := map[string][]Entry{}
	var e Entry
	_, err = pgx.ForEachRow(rows, []any{&e.OpID, &e.Account, &e.Amount, &e.AppliedAt}, func() error {
		e.AppliedAt = e.AppliedAt.UTC()
		out[e.OpID] = append(out[e.OpID], e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("accounts: entries: %w", err)
	}
	return out, nil
}

// EntriesOf returns the operation ids of account's entries, in the order they were written.
func (s *Postgres) EntriesOf(ctx context.Context, account string) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT op_id FROM `+s.entries+` WHERE account_id = $1 ORDER BY entry_id`, account)
	if err != nil {
		return nil, fmt.Errorf("accounts: entries of %q: %w", account, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("accounts: entries of %q: %w", account, err)
	}
	return ids, nil
}

// Markers returns the operation ids of the effect sink's markers with their creation times.
// The table is the sink's; the store only reads it.
func (s *Postgres) Markers(ctx context.Context) (map[string]time.Time, error) {
	rows, err := s.pool.Query(ctx, `SELECT op_id, created_at FROM `+s.markers)
	if err != nil {
		return nil, fmt.Errorf("accounts: markers: %w", err)
	}
	out := map[string]time.Time{}
	var (
		id string
		at time.Time
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &at}, func() error {
		out[id] = at.UTC()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("accounts: markers: %w", err)
	}
	return out, nil
}
