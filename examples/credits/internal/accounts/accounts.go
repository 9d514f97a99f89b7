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

	credit string
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
	s.credit = fmt.Sprintf(`WITH credited AS (UPDATE %s SET balance = balance + $3 WHERE account_id = $2 RETURNING account_id) `+
		`INSERT INTO %s (op_id, account_id, amount, applied_at) SELECT $1, account_id, $3, $4 FROM credited`, s.accounts, s.entries)
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
				`account_id text NOT NULL REFERENCES ` + s.accounts + `, amount bigint NOT NULL, applied_at timestamptz NOT NULL)`,
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

// Credit is the effect of c, for [postgres.Effects.Apply]: it adds c.Amount to the account's
// balance and writes one entry, in tx. Its command tag counts the entries written, zero when
// the account does not exist. A data error of the database (SQLSTATE class 22, such as a
// balance overflowing bigint, or 23, a constraint) is returned as a [*RejectedError].
//
// [postgres.Effects.Apply]: https://pkg.go.dev/github.com/streamledger/streamledger/sink/postgres#Effects.Apply
func (s *Store) Credit(ctx context.Context, tx pgx.Tx, c credit.Credit) (pgconn.CommandTag, error) {
	tag, err := tx.Exec(ctx, s.credit, c.ID, c.Account, c.Amount, s.clock().UTC())
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && len(pgErr.Code) == 5 && (pgErr.Code[:2] == "22" || pgErr.Code[:2] == "23") {
			return tag, &RejectedError{ID: c.ID, Account: c.Account, Err: err}
		}
		return tag, err
	}
	return tag, nil
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
