package accounts

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/streamledger/streamledger/examples/credits/internal/credit"
	"github.com/streamledger/streamledger/sink"
	mysink "github.com/streamledger/streamledger/sink/mysql"
)

// MySQL is the [Store] on MySQL or MariaDB, with mysql.Effects as its effect sink, in the
// connection's database. It is safe for concurrent use.
type MySQL struct {
	db      *sql.DB
	effects *mysink.Effects
	clock   func() time.Time
	markers string
}

// mysqlChunk bounds the rows of one statement of the effect: 4 placeholders per entry keep
// it within MySQL's 65,535.
const mysqlChunk = 4096

// NewMySQL returns the Store on db. It does not touch the database; see [MySQL.Migrate].
func NewMySQL(db *sql.DB, cfg Config) (*MySQL, error) {
	if db == nil {
		return nil, errors.New("accounts: nil db")
	}
	if cfg.Schema != "" {
		return nil, fmt.Errorf("accounts: Schema %q: on MySQL the tables are in the connection's database", cfg.Schema)
	}
	cfg = cfg.withDefaults()
	fx, err := mysink.NewEffects(db, mysink.EffectConfig{
		Table: cfg.Markers, Horizon: cfg.Horizon, SourceRetention: cfg.SourceRetention,
		Retry: cfg.Retry, Clock: cfg.Clock, Rand: cfg.Rand,
	})
	if err != nil {
		return nil, fmt.Errorf("accounts: effect sink: %w", err)
	}
	return &MySQL{db: db, effects: fx, clock: cfg.Clock, markers: "`" + strings.ReplaceAll(cfg.Markers, "`", "``") + "`"}, nil
}

// Migrate creates the tables and the marker table if they do not exist.
func (s *MySQL) Migrate(ctx context.Context) error {
	for _, st := range []string{
		"CREATE TABLE IF NOT EXISTS accounts (account_id VARBINARY(255) NOT NULL PRIMARY KEY, balance BIGINT NOT NULL) ENGINE=InnoDB",
		"CREATE TABLE IF NOT EXISTS account_entries (entry_id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, op_id VARBINARY(255) NOT NULL, " +
			"account_id VARBINARY(255) NOT NULL, amount BIGINT NOT NULL, applied_at DATETIME(6) NOT NULL, " +
			"INDEX account_entries_op_id (op_id)) ENGINE=InnoDB",
	} {
		if _, err := s.db.ExecContext(ctx, st); err != nil {
			return fmt.Errorf("accounts: migrate: %w", err)
		}
	}
	return s.effects.Migrate(ctx)
}

// Open creates account with an opening balance. An account that exists is left as it is;
// created reports which happened.
func (s *MySQL) Open(ctx context.Context, account string, balance int64) (created bool, err error) {
	res, err := s.db.ExecContext(ctx, "INSERT INTO accounts (account_id, balance) VALUES (?, ?) "+
		"ON DUPLICATE KEY UPDATE account_id = account_id", account, balance)
	if err != nil {
		return false, fmt.Errorf("accounts: open %q: %w", account, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// Apply applies cs through the effect sink in one transaction with [MySQL.Effect].
func (s *MySQL) Apply(ctx context.Context, cs []credit.Credit, check func(i int) error) ([]sink.Result, error) {
	return s.effects.Apply(ctx, operations(cs), s.Effect(cs, check))
}

// Prune deletes the markers older than the horizon.
func (s *MySQL) Prune(ctx context.Context) (int64, error) { return s.effects.Prune(ctx) }

// Effect returns the effect of the batch cs for mysql.Effects.Apply: [MySQL.Credits] of the
// accepted credits, each refused with [sink.ErrNoEffect] when its account does not exist,
// after check (as [Store.Apply] describes).
func (s *MySQL) Effect(cs []credit.Credit, check func(i int) error) mysink.Effect {
	return func(ctx context.Context, tx *sql.Tx, ops []int) ([]sink.Result, error) {
		return effect(cs, ops, check, func(batch []credit.Credit) ([]bool, error) { return s.Credits(ctx, tx, batch) })
	}
}

// Credits is the effect of a batch of credits with distinct IDs, in tx: it locks their
// accounts in the order of their IDs with SELECT ... FOR UPDATE, which also tells which
// exist (MySQL counts an UPDATE that changes nothing as touching no row, so the rows
// affected cannot), adds each existing account's credits to its balance with one multi-row
// INSERT ... ON DUPLICATE KEY UPDATE, and writes one entry per credit, in the order of cs,
// with one multi-row INSERT. It returns, per credit, whether its account exists. A sum that
// overflows BIGINT fails the statement (error 1690), and the sink then applies each credit
// alone.
func (s *MySQL) Credits(ctx context.Context, tx *sql.Tx, cs []credit.Credit) ([]bool, error) {
	exists, err := s.lock(ctx, tx, cs)
	if err != nil {
		return nil, err
	}
	totals := map[string]int64{}
	var order []string
	written := make([]bool, len(cs))
	var entries []any
	at := s.clock().UTC().Truncate(time.Microsecond)
	for i, c := range cs {
		if !exists[c.Account] {
			continue
		}
		written[i] = true
		if _, ok := totals[c.Account]; !ok {
			order = append(order, c.Account)
		}
		totals[c.Account] += c.Amount
		entries = append(entries, c.ID, c.Account, c.Amount, at)
	}
	credit := make([]any, 0, 2*len(order))
	for _, a := range order {
		credit = append(credit, a, totals[a])
	}
	if err := execRows(ctx, tx, "INSERT INTO accounts (account_id, balance) VALUES ", " ON DUPLICATE KEY UPDATE balance = balance + VALUES(balance)", 2, credit); err != nil {
		return nil, fmt.Errorf("accounts: credit: %w", err)
	}
	if err := execRows(ctx, tx, "INSERT INTO account_entries (op_id, account_id, amount, applied_at) VALUES ", "", 4, entries); err != nil {
		return nil, fmt.Errorf("accounts: entries: %w", err)
	}
	return written, nil
}

// lock locks the accounts of cs in the order of their IDs and returns those that exist.
func (s *MySQL) lock(ctx context.Context, tx *sql.Tx, cs []credit.Credit) (map[string]bool, error) {
	exists := map[string]bool{}
	var accts []any
	for _, c := range cs {
		if _, ok := exists[c.Account]; !ok {
			exists[c.Account] = false
			accts = append(accts, c.Account)
		}
	}
	for len(accts) > 0 {
		part := accts[:min(len(accts), mysqlChunk)]
		accts = accts[len(part):]
		// FORCE INDEX: a locking read that scanned the table (as the optimizer may on a small
		// one) would wait for every account another batch locked, not only for these.
		rows, err := tx.QueryContext(ctx, "SELECT account_id FROM accounts FORCE INDEX (PRIMARY) WHERE account_id IN ("+
			strings.TrimSuffix(strings.Repeat("?, ", len(part)), ", ")+") ORDER BY account_id FOR UPDATE", part...)
		if err != nil {
			return nil, fmt.Errorf("accounts: lock accounts: %w", err)
		}
		err = eachRow(rows, func(rows *sql.Rows) error {
			var id string
			err := rows.Scan(&id)
			exists[id] = true
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("accounts: lock accounts: %w", err)
		}
	}
	return exists, nil
}

// execRows runs head VALUES (rows of width args) tail for args, in statements of at most
// mysqlChunk rows.
func execRows(ctx context.Context, tx *sql.Tx, head, tail string, width int, args []any) error {
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", width), ", ") + ")"
	for len(args) > 0 {
		n := min(len(args)/width, mysqlChunk)
		q := head + strings.TrimSuffix(strings.Repeat(row+", ", n), ", ") + tail
		if _, err := tx.ExecContext(ctx, q, args[:n*width]...); err != nil {
			return err
		}
		args = args[n*width:]
	}
	return nil
}

// eachRow calls scan on every row and closes rows.
func eachRow(rows *sql.Rows, scan func(*sql.Rows) error) error {
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Balance returns the balance of account; ok is false when it does not exist.
func (s *MySQL) Balance(ctx context.Context, account string) (balance int64, ok bool, err error) {
	err = s.db.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE account_id = ?", account).Scan(&balance)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("accounts: balance of %q: %w", account, err)
	}
	return balance, true, nil
}

// Balances returns every account's balance.
func (s *MySQL) Balances(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	err := s.query(ctx, "SELECT account_id, balance FROM accounts", nil, func(rows *sql.Rows) error {
		var id string
		var bal int64
		err := rows.Scan(&id, &bal)
		out[id] = bal
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("accounts: balances: %w", err)
	}
	return out, nil
}

// Entries returns the entries of every operation id, in the order they were written.
func (s *MySQL) Entries(ctx context.Context) (map[string][]Entry, error) {
	out := map[string][]Entry{}
	err := s.query(ctx, "SELECT op_id, account_id, amount, applied_at FROM account_entries ORDER BY entry_id", nil, func(rows *sql.Rows) error {
		var e Entry
		var at any
		if err := rows.Scan(&e.OpID, &e.Account, &e.Amount, &at); err != nil {
			return err
		}
		var err error
		e.AppliedAt, err = timeOf(at)
		out[e.OpID] = append(out[e.OpID], e)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("accounts: entries: %w", err)
	}
	return out, nil
}

// EntriesOf returns the operation ids of account's entries, in the order they were written.
func (s *MySQL) EntriesOf(ctx context.Context, account string) ([]string, error) {
	var ids []string
	err := s.query(ctx, "SELECT op_id FROM account_entries WHERE account_id = ? ORDER BY entry_id", []any{account}, func(rows *sql.Rows) error {
		var id string
		err := rows.Scan(&id)
		ids = append(ids, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("accounts: entries of %q: %w", account, err)
	}
	return ids, nil
}

// Markers returns the operation ids of the effect sink's markers with their creation times.
func (s *MySQL) Markers(ctx context.Context) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	err := s.query(ctx, "SELECT op_id, created_at FROM "+s.markers, nil, func(rows *sql.Rows) error {
		var id string
		var at any
		if err := rows.Scan(&id, &at); err != nil {
			return err
		}
		var err error
		out[id], err = timeOf(at)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("accounts: markers: %w", err)
	}
	return out, nil
}

func (s *MySQL) query(ctx context.Context, q string, args []any, scan func(*sql.Rows) error) error {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	return eachRow(rows, scan)
}

// timeOf reads a DATETIME(6) stored in UTC, as the driver returns it: a time.Time with
// parseTime=true in the DSN, its text otherwise.
func timeOf(v any) (time.Time, error) {
	switch v := v.(type) {
	case time.Time:
		return v.UTC(), nil
	case []byte:
		return time.ParseInLocation("2006-01-02 15:04:05.999999", string(v), time.UTC)
	}
	return time.Time{}, fmt.Errorf("accounts: a time stored as %T", v)
}
