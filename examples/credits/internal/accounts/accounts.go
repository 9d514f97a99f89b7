package accounts

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamledger/streamledger/examples/credits/internal/credit"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/postgres"
)

// ClassRejected is the dead-letter class of a [*RejectedError].
const ClassRejected = "credit.rejected"

// Config names the tables of a [Store]. Zero fields take the defaults in brackets.
type Config struct {
	// Schema holds the tables [public].
	Schema string
	// Markers is the effect sink's marker table, read by [Store.Markers] only
	// [streamledger_markers].
	Markers string
	// Clock stamps applied_at [time.Now].
	Clock func() time.Time
}

// Store is the business side of the example: accounts, their entries, and the credit effect.
// It is safe for concurrent use.
type Store struct {
	pool  *pgxpool.Pool
	clock func() time.Time

	schema, accounts, entries, markers string

	lock, credit string
}

// New returns a Store on pool. It does not touch the database; see [Store.Migrate].
func New(pool *pgxpool.Pool, cfg Config) (*Store, error) {
	if pool == nil {
		return nil, errors.New("accounts: nil pool")
	}
	if cfg.Schema == "" {
		cfg.Schema = "public"
	}
	if cfg.Markers == "" {
		cfg.Markers = "streamledger_markers"
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	s := &Store{
		pool:     pool,
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

// Migrate creates the schema and the tables if they do not exist. Concurrent calls are
// serialized by an advisory lock.
func (s *Store) Migrate(ctx context.Context) error {
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
func (s *Store) Open(ctx context.Context, account string, balance int64) (created bool, err error) {
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
func (s *Store) Credits(ctx context.Context, tx pgx.Tx, cs []credit.Credit) ([]bool, error) {
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

// Effect returns the effect of the batch cs for [postgres.Effects.Apply]: [Store.Credits] of
// the accepted credits, each refused with [sink.ErrNoEffect] when its account does not exist.
// check, if not nil, runs first on each accepted credit (by its position in cs) and refuses
// those it returns an error for, which then write nothing.
//
// [postgres.Effects.Apply]: https://pkg.go.dev/github.com/streamledger/streamledger/sink/postgres#Effects.Apply
func (s *Store) Effect(cs []credit.Credit, check func(i int) error) postgres.Effect {
	return func(ctx context.Context, tx pgx.Tx, ops []int) ([]error, error) {
		errs := make([]error, len(ops))
		batch := make([]credit.Credit, 0, len(ops))
		at := make([]int, 0, len(ops)) // position in ops of each credit of batch
		for k, i := range ops {
			if check != nil {
				if errs[k] = check(i); errs[k] != nil {
					continue
				}
			}
			batch = append(batch, cs[i])
			at = append(at, k)
		}
		if len(batch) == 0 {
			return errs, nil
		}
		written, err := s.Credits(ctx, tx, batch)
		if err != nil {
			return nil, err
		}
		for j, ok := range written {
			if !ok {
				c := batch[j]
				errs[at[j]] = fmt.Errorf("%w: credit %q: account %q does not exist", sink.ErrNoEffect, c.ID, c.Account)
			}
		}
		return errs, nil
	}
}

// Refused returns the [*RejectedError] of c when err is a data error of the database (SQLSTATE
// class 22, such as a balance overflowing bigint, or 23, a constraint), and nil otherwise.
func Refused(c credit.Credit, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && len(pgErr.Code) == 5 && (pgErr.Code[:2] == "22" || pgErr.Code[:2] == "23") {
		return &RejectedError{ID: c.ID, Account: c.Account, Err: err}
	}
	return nil
}

// RejectedError is a credit the database refused as data: the transaction was rolled back and
// no marker stored. It belongs in the dead-letter topic.
type RejectedError struct {
	ID, Account string
	Err         error // the *pgconn.PgError
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("accounts: credit %q to %q refused by the database: %v", e.ID, e.Account, e.Err)
}

func (e *RejectedError) Unwrap() error { return e.Err }

// ErrorClass returns [ClassRejected].
func (e *RejectedError) ErrorClass() string { return ClassRejected }

// Balance returns the balance of account; ok is false when it does not exist.
func (s *Store) Balance(ctx context.Context, account string) (balance int64, ok bool, err error) {
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
func (s *Store) Balances(ctx context.Context) (map[string]int64, error) {
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

// Entry is one applied credit.
type Entry struct {
	OpID      string
	Account   string
	Amount    int64
	AppliedAt time.Time
}

// Entries returns the entries of every operation id, in the order they were written.
func (s *Store) Entries(ctx context.Context) (map[string][]Entry, error) {
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
func (s *Store) EntriesOf(ctx context.Context, account string) ([]string, error) {
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
func (s *Store) Markers(ctx context.Context) (map[string]time.Time, error) {
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
