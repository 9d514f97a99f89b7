package mysql

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/streamledger/streamledger/internal/effectbatch"
	"github.com/streamledger/streamledger/internal/faults"
	"github.com/streamledger/streamledger/internal/horizon"
	"github.com/streamledger/streamledger/internal/retry"
	"github.com/streamledger/streamledger/sink"
)

const opApplyEffects = "apply effects"

// MaxIDBytes is the longest operation ID the marker table holds, in bytes: its key is a
// VARBINARY(255), compared byte by byte as Go compares strings.
const MaxIDBytes = 255

// ErrIDTooLong is wrapped by the [sink.Rejected] result of an operation whose ID is longer
// than [MaxIDBytes]: it has no marker and no effect.
var ErrIDTooLong = errors.New("mysql: operation ID longer than the marker table holds")

// Effect applies, in tx, the effects of the operations of a batch whose markers were just
// accepted. ops holds their positions in the batch passed to [Effects.Apply], in batch order;
// their IDs are distinct. It returns one [sink.Result] per element of ops: [sink.Applied]
// when that operation's effect wrote at least one row, or [sink.Rejected] with why the
// operation is refused in Err (wrapping [sink.ErrNoEffect] when its effect touched no row).
// Any other result fails the call with an error wrapping [sink.ErrInvalid]. A rejected
// operation must have written nothing; its marker is removed in the same transaction and
// Apply returns its result as it is.
// Reporting every operation that touched no row is the effect's duty: a marker committed
// without its effect would record the operation as done. MySQL counts a row as affected only
// when its values change, so an effect that must tell a missing row from an unchanged one
// reads it first (SELECT ... FOR UPDATE) or changes a column on every write.
//
// A returned error fails the statements. A data error (SQLSTATE class 22 or 23, a value that
// a column refuses, a CHECK constraint) names no operation, so Apply runs the batch again with
// each operation's effect alone under a savepoint, in order, and rejects those that fail so;
// any other error fails the attempt (see [Effects.Apply]). Effect must use only tx, and must
// not commit or roll it back.
type Effect func(ctx context.Context, tx *sql.Tx, ops []int) ([]sink.Result, error)

// EffectConfig configures [Effects]. In every field, zero (or empty) means the default the
// field states; a negative value is accepted only where the field says what it means, and
// [NewEffects] refuses it anywhere else with an error wrapping [sink.ErrConfig] that names
// the field.
type EffectConfig struct {
	// Table is the marker table, in the connection's database. Empty means
	// streamledger_markers (the default).
	Table string
	// Horizon is how long markers are kept: [Effects.Prune] deletes only markers older than
	// it. Zero means 7 days (the default); negative means markers are kept forever.
	Horizon time.Duration
	// SourceRetention is how far back the source can redeliver (the topic's retention.ms). A
	// Horizon shorter than it is refused with an error wrapping [sink.ErrHorizon]: an
	// operation replayed after its marker was pruned would be applied a second time. Zero
	// declares nothing (the default); negative means the topic keeps records forever, which
	// only a negative Horizon covers.
	SourceRetention time.Duration
	// Retry bounds the retries of transient failures (see [sink.RetryPolicy] for its
	// defaults).
	Retry sink.RetryPolicy
	// Clock stamps markers and places the pruning horizon. Nil means time.Now (the default).
	Clock func() time.Time
	// Rand provides the token that tells a call its own markers after a commit whose
	// acknowledgement was lost. Nil means crypto/rand.Reader (the default).
	Rand io.Reader
}

// Effects applies effects that are not naturally idempotent exactly once per operation ID,
// within the database and while markers are retained: each operation's marker (operation ID,
// payload hash) and its effect commit in one transaction or not at all. It is safe for
// concurrent use; concurrent calls, in this process or others, are arbitrated by the
// markers' primary key.
type Effects struct {
	db    *sql.DB
	cfg   EffectConfig
	table string
	chunk int // markers per statement: markerChunk, smaller in tests
}

// NewEffects returns an effect sink writing markers through db. It does not touch the
// database; call [Effects.Migrate] to create the marker table.
func NewEffects(db *sql.DB, cfg EffectConfig) (*Effects, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: mysql.NewEffects: the db is nil, want a *sql.DB", sink.ErrConfig)
	}
	if cfg.Table == "" {
		cfg.Table = "streamledger_markers"
	}
	if err := checkName("EffectConfig.Table", cfg.Table); err != nil {
		return nil, fmt.Errorf("%w: %w", sink.ErrConfig, err)
	}
	h, err := horizon.Resolve(cfg.Horizon, cfg.SourceRetention, "EffectConfig.Horizon", "EffectConfig.SourceRetention")
	if err != nil {
		return nil, err
	}
	cfg.Horizon = h
	cfg.Retry = retry.Resolve(cfg.Retry)
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	return &Effects{db: db, cfg: cfg, table: quote(cfg.Table), chunk: markerChunk}, nil
}

// Migrate creates the marker table; idempotent and safe to run concurrently. Like
// [Sink.Migrate], it refuses a connection without a default database.
func (e *Effects) Migrate(ctx context.Context) error {
	return migrate(ctx, e.db, e.migrations())
}

// Statements returns the SQL statements the effect sink generates; a statement over a list
// of markers is shown for one marker.
func (e *Effects) Statements() []string {
	out := []string{e.insertSQL(1), e.lookupSQL(1), e.mineSQL(), e.forgetSQL(), e.pruneSQL()}
	for _, m := range e.migrations() {
		for _, step := range m.steps {
			out = append(out, step...)
		}
	}
	return out
}

// Apply applies a batch of operations in one transaction and returns one [sink.Result] per
// operation, in the order of ops. Per operation, as if the batch were applied one operation at
// a time in order:
//
//   - [sink.Applied]: its marker was accepted and committed with its effect by this call;
//   - [sink.Duplicate]: a marker with the same ID and payload was committed before, or by an
//     earlier operation of ops; no effect;
//   - [sink.Conflict]: a marker with the same ID and another payload exists; no effect;
//   - [sink.Rejected]: the effect refused it or touched no row, or its ID is longer than
//     [MaxIDBytes] ([ErrIDTooLong]); no effect, no marker.
//
// A rejected or conflicting operation neither aborts nor holds back the others. Operations
// with the same ID are decided in the order of ops, and effect receives the accepted
// operations in that order, so an effect that applies them in order (entries, balances of
// one account) sees the order of the batch.
//
// The markers are inserted with multi-row INSERT ... ON DUPLICATE KEY UPDATE statements that
// change nothing on a duplicate but lock it, in a fixed order of IDs so that concurrent
// batches wait on each other's markers in one order; the markers are then read back, and
// those that carry this call's random token are the ones it inserted (MySQL has no RETURNING
// on INSERT). Effect runs once on the accepted operations; the markers of rejected operations
// are deleted in the same transaction, one by one by primary key. An ID that occurs again
// after a rejection takes one more such round. Lists of markers are cut into statements of at
// most 4096 rows, within MySQL's 65,535 placeholders.
//
// A transient failure (a lost connection, a deadlock, a lock wait timeout) retries the whole
// batch, up to the retry policy. A commit whose acknowledgement was lost is recognised by the
// retry, from the token its markers carry, and its results are returned. Any other failure,
// or one that persists, is returned as a [*sink.WriteError]: nothing of the batch may be
// assumed committed, and no results are returned. An operation without an ID, or a nil
// effect, is an error wrapping [sink.ErrInvalid], and nothing is written.
func (e *Effects) Apply(ctx context.Context, ops []sink.Operation, effect Effect) ([]sink.Result, error) {
	if err := effectbatch.Check(ops, effect != nil); err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		return nil, nil
	}
	b, err := effectbatch.New(ops, e.cfg.Rand, refuseLongID)
	if err != nil {
		return nil, err
	}
	err = b.Do(ctx, e.cfg.Retry, opApplyEffects, transient, func(ctx context.Context, n int) error {
		return attemptTx(ctx, e.db, faults.Attempt{Op: opApplyEffects, N: n}, func(ctx context.Context, tx *sql.Tx) error {
			return e.attempt(ctx, tx, b, effect, n)
		})
	})
	if err != nil {
		return nil, err
	}
	return b.Res, nil
}

func refuseLongID(op sink.Operation) error {
	if len(op.ID) > MaxIDBytes {
		return fmt.Errorf("%w: %q has %d bytes, the limit is %d", ErrIDTooLong, op.ID[:32]+"...", len(op.ID), MaxIDBytes)
	}
	return nil
}

// pruneChunk bounds the markers one DELETE of [Effects.Prune] removes, so that pruning a
// large backlog holds its locks briefly and does not block writers.
const pruneChunk = 10000

// Prune deletes the markers older than the horizon and returns how many it deleted. A
// marker younger than the horizon is never deleted. When markers are kept forever (a
// negative [EffectConfig.Horizon]) it deletes nothing. It deletes in statements of at most
// 10,000 markers, each its own transaction.
func (e *Effects) Prune(ctx context.Context) (int64, error) {
	if e.cfg.Horizon == 0 {
		return 0, nil
	}
	before := e.cfg.Clock().Add(-e.cfg.Horizon).UTC()
	var total int64
	for {
		var n int64
		err := retry.Do(ctx, e.cfg.Retry, "prune markers", transient, func(ctx context.Context, _ int) error {
			res, err := e.db.ExecContext(ctx, e.pruneSQL(), before, pruneChunk)
			if err != nil {
				return err
			}
			n, err = res.RowsAffected()
			return err
		})
		total += n
		if err != nil || n < pruneChunk {
			return total, err
		}
	}
}
