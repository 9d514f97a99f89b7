package accounts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/streamledger/streamledger/examples/credits/internal/credit"
	"github.com/streamledger/streamledger/sink"
)

// ClassRejected is the dead-letter class of a [*RejectedError].
const ClassRejected = "credit.rejected"

// Store is the business side of the example on one database: accounts, their entries, and
// the credit effect, applied through that database's effect sink. [Postgres] and [MySQL]
// implement it, with the same tables and the same results.
type Store interface {
	// Migrate creates the tables and the effect sink's marker table if they do not exist;
	// safe to run concurrently.
	Migrate(ctx context.Context) error
	// Open creates account with an opening balance. An account that exists is left as it
	// is; created reports which happened.
	Open(ctx context.Context, account string, balance int64) (created bool, err error)
	// Apply applies cs (distinct or repeated IDs, in offset order) through the effect sink in
	// one transaction, with the credit effect: each accepted credit adds its amount to its
	// account's balance and writes one entry, in the order of cs; a credit to an unknown
	// account is rejected with [sink.ErrNoEffect]. check, if not nil, runs first on each
	// accepted credit (by its position in cs) and refuses those it returns an error for.
	// The results and errors are the effect sink's Apply.
	Apply(ctx context.Context, cs []credit.Credit, check func(i int) error) ([]sink.Result, error)
	// Prune deletes the markers older than the horizon and returns how many it deleted.
	Prune(ctx context.Context) (int64, error)
	// Balance returns the balance of account; ok is false when it does not exist.
	Balance(ctx context.Context, account string) (balance int64, ok bool, err error)
	// Balances returns every account's balance.
	Balances(ctx context.Context) (map[string]int64, error)
	// Entries returns the entries of every operation id, in the order they were written.
	Entries(ctx context.Context) (map[string][]Entry, error)
	// EntriesOf returns the operation ids of account's entries, in the order they were
	// written.
	EntriesOf(ctx context.Context, account string) ([]string, error)
	// Markers returns the operation ids of the effect sink's markers with their creation
	// times. The table is the sink's; the store only reads it.
	Markers(ctx context.Context) (map[string]time.Time, error)
}

// Config configures a [Store]. Zero fields take the defaults in brackets.
type Config struct {
	// Schema holds the tables on Postgres [public]. On MySQL the tables are in the
	// connection's database, and Schema must be empty.
	Schema string
	// Markers is the effect sink's marker table [streamledger_markers].
	Markers string
	// Clock stamps applied_at and the markers, and places the pruning horizon [time.Now].
	Clock func() time.Time
	// Horizon, SourceRetention, Retry and Rand configure the effect sink (EffectConfig of
	// sink/postgres and sink/mysql).
	Horizon, SourceRetention time.Duration
	Retry                    sink.RetryPolicy
	Rand                     io.Reader
}

func (cfg Config) withDefaults() Config {
	if cfg.Markers == "" {
		cfg.Markers = "streamledger_markers"
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	return cfg
}

// operations returns the effect sink's operations of cs.
func operations(cs []credit.Credit) []sink.Operation {
	ops := make([]sink.Operation, len(cs))
	for i, c := range cs {
		ops[i] = c.Operation()
	}
	return ops
}

// effect is the credit effect on the accepted credits ops (positions in cs): check first,
// then credits on those check let through; a credit is rejected with check's error, or with
// [sink.ErrNoEffect] when credits reports that its account does not exist, and applied
// otherwise.
func effect(cs []credit.Credit, ops []int, check func(i int) error, credits func([]credit.Credit) ([]bool, error)) ([]sink.Result, error) {
	res := make([]sink.Result, len(ops))
	batch := make([]credit.Credit, 0, len(ops))
	at := make([]int, 0, len(ops)) // position in ops of each credit of batch
	for k, i := range ops {
		if check != nil {
			if err := check(i); err != nil {
				res[k] = sink.Result{Outcome: sink.Rejected, Err: err}
				continue
			}
		}
		batch = append(batch, cs[i])
		at = append(at, k)
	}
	if len(batch) == 0 {
		return res, nil
	}
	written, err := credits(batch)
	if err != nil {
		return nil, err
	}
	for j, ok := range written {
		res[at[j]] = sink.Result{Outcome: sink.Applied}
		if !ok {
			c := batch[j]
			res[at[j]] = sink.Result{Outcome: sink.Rejected, Err: fmt.Errorf("%w: credit %q: account %q does not exist", sink.ErrNoEffect, c.ID, c.Account)}
		}
	}
	return res, nil
}

// Refused returns the [*RejectedError] of c when err is a data error of the database, and nil
// otherwise: on Postgres SQLSTATE class 22 (such as a balance overflowing bigint) or 23 (a
// constraint); on MySQL the same classes, a value out of range (1690) or a CHECK constraint.
func Refused(c credit.Credit, err error) error {
	if dataError(err) {
		return &RejectedError{ID: c.ID, Account: c.Account, Err: err}
	}
	return nil
}

func dataError(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return len(pgErr.Code) == 5 && (pgErr.Code[:2] == "22" || pgErr.Code[:2] == "23")
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1690, 1366, 3819, 4025: // out of range, incorrect value, CHECK (MySQL, MariaDB)
			return true
		}
		return me.SQLState[0] == '2' && (me.SQLState[1] == '2' || me.SQLState[1] == '3')
	}
	return false
}

// RejectedError is a credit the database refused as data: the transaction was rolled back and
// no marker stored. It belongs in the dead-letter topic.
type RejectedError struct {
	ID, Account string
	Err         error // the *pgconn.PgError or *mysql.MySQLError
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("accounts: credit %q to %q refused by the database: %v", e.ID, e.Account, e.Err)
}

func (e *RejectedError) Unwrap() error { return e.Err }

// ErrorClass returns [ClassRejected].
func (e *RejectedError) ErrorClass() string { return ClassRejected }

// Entry is one applied credit.
type Entry struct {
	OpID      string
	Account   string
	Amount    int64
	AppliedAt time.Time
}
