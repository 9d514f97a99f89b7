package postgres

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamledger/streamledger/internal/effectbatch"
	"github.com/streamledger/streamledger/internal/faults"
	"github.com/streamledger/streamledger/internal/horizon"
	"github.com/streamledger/streamledger/internal/retry"
	"github.com/streamledger/streamledger/sink"
)

const opApplyEffects = "apply effects"

// Effect applies, in tx, the effects of the operations of a batch whose markers were just
// accepted. ops holds their positions in the batch passed to [Effects.Apply], in batch order;
// their IDs are distinct. It returns one [sink.Result] per element of ops: [sink.Applied]
// when that operation's effect wrote at least one row, or [sink.Rejected] with why the
// operation is refused in Err (wrapping [sink.ErrNoEffect] when its effect touched no row).
// Any other result fails the call with an error wrapping [sink.ErrInvalid]. A rejected
// operation must have written nothing; its marker is removed in the same transaction and
// Apply returns its result as it is.
// Reporting every operation that touched no row is the effect's duty: a marker committed
// without its effect would record the operation as done.
//
// A returned error fails the statements. One of SQLSTATE class 22 (data exception) or 23
// (integrity constraint violation) names no operation, so Apply runs the batch again with each
// operation's effect alone under a savepoint, in order, and rejects those that fail so; any
// other error fails the attempt (see [Effects.Apply]). Effect must use only tx, and must not
// commit or roll it back.
type Effect func(ctx context.Context, tx pgx.Tx, ops []int) ([]sink.Result, error)

// EffectConfig configures [Effects]. In every field, zero (or empty) means the default the
// field states; a negative value is accepted only where the field says what it means, and
// [NewEffects] refuses it anywhere else with an error wrapping [sink.ErrConfig] that names
// the field.
type EffectConfig struct {
	// Schema holds the marker table. Empty means public (the default).
	Schema string
	// Table is the marker table. Empty means streamledger_markers (the default).
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
	pool *pgxpool.Pool
	cfg  EffectConfig

	insert, lookup, forget, mine, prune string
	table                               string
}

// NewEffects returns an effect sink writing markers through pool. It does not touch the
// database; call [Effects.Migrate] to create the marker table.
func NewEffects(pool *pgxpool.Pool, cfg EffectConfig) (*Effects, error) {
	if pool == nil {
		return nil, fmt.Errorf("%w: postgres.NewEffects: the pool is nil, want a *pgxpool.Pool", sink.ErrConfig)
	}
	if cfg.Schema == "" {
		cfg.Schema = "public"
	}
	if cfg.Table == "" {
		cfg.Table = "streamledger_markers"
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
	e := &Effects{pool: pool, cfg: cfg, table: ident(cfg.Schema, cfg.Table)}
	e.insert = fmt.Sprintf(`INSERT INTO %s ("op_id", "payload_hash", "token", "created_at") `+
		`SELECT u.id, u.hash, $3, $4 FROM unnest($1::text[], $2::bytea[]) WITH ORDINALITY AS u(id, hash, n) ORDER BY u.n `+
		`ON CONFLICT ("op_id") DO NOTHING RETURNING "op_id"`, e.table)
	e.lookup = fmt.Sprintf(`SELECT "op_id", "payload_hash" FROM %s WHERE "op_id" = ANY($1::text[])`, e.table)
	e.forget = fmt.Sprintf(`DELETE FROM %s WHERE "op_id" = ANY($1::text[]) AND "token" = $2`, e.table)
	e.mine = fmt.Sprintf(`SELECT count(*) FROM %s WHERE "op_id" = ANY($1::text[]) AND "token" = $2`, e.table)
	e.prune = fmt.Sprintf(`DELETE FROM %s WHERE "created_at" < $1`, e.table)
	return e, nil
}

func (e *Effects) migrations() []migration {
	return []migration{{object: "markers:" + e.cfg.Table, steps: [][]string{{
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s ("op_id" text PRIMARY KEY, "payload_hash" bytea NOT NULL, `+
			`"token" bytea NOT NULL, "created_at" timestamptz NOT NULL)`, e.table),
		fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %s ON %s ("created_at")`, ident(e.cfg.Table+"_created_at"), e.table),
	}}}}
}

// Migrate creates the marker table; idempotent and safe to run concurrently.
func (e *Effects) Migrate(ctx context.Context) error {
	return migrate(ctx, e.pool, e.cfg.Schema, e.migrations())
}

// Statements returns the SQL statements the effect sink generates.
func (e *Effects) Statements() []string {
	out := []string{e.insert, e.lookup, e.forget, e.mine, e.prune}
	for _, m := range e.migrations() {
		for _, st := range m.steps {
			out = append(out, st...)
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
//   - [sink.Rejected]: the effect refused it or touched no row; no effect, no marker.
//
// A rejected or conflicting operation neither aborts nor holds back the others. Operations
// with the same ID are decided in the order of ops, and effect receives the accepted
// operations in that order, so an effect that applies them in order (entries, balances of
// one account) sees the order of the batch.
//
// The markers are inserted with one INSERT ... ON CONFLICT DO NOTHING RETURNING, in a fixed
// order of IDs so that concurrent batches cannot deadlock on them; the markers found are read
// with one SELECT; effect runs once on the accepted operations; the markers of rejected
// operations are deleted in the same transaction. An ID that occurs again after a rejection
// takes one more such round.
//
// A transient failure (a lost connection, a deadlock, a serialization failure) retries the
// whole batch, up to the retry policy. A commit whose acknowledgement was lost is recognised by
// the retry, from the random token its markers carry, and its results are returned. Any other
// failure, or one that persists, is returned as a [*sink.WriteError]: nothing of the batch may
// be assumed committed, and no results are returned. An operation without an ID, or a nil
// effect, is an error wrapping [sink.ErrInvalid], and nothing is written.
func (e *Effects) Apply(ctx context.Context, ops []sink.Operation, effect Effect) ([]sink.Result, error) {
	if err := effectbatch.Check(ops, effect != nil); err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		return nil, nil
	}
	b, err := effectbatch.New(ops, e.cfg.Rand, nil)
	if err != nil {
		return nil, err
	}
	err = b.Do(ctx, e.cfg.Retry, opApplyEffects, transient, func(ctx context.Context, n int) error {
		return attemptTx(ctx, e.pool, faults.Attempt{Op: opApplyEffects, N: n}, func(ctx context.Context, tx pgx.Tx) error {
			return e.attempt(ctx, tx, b, effect, n)
		})
	})
	if err != nil {
		return nil, err
	}
	return b.Res, nil
}

// Prune deletes the markers older than the horizon and returns how many it deleted. A
// marker younger than the horizon is never deleted. When markers are kept forever (a
// negative [EffectConfig.Horizon]) it deletes nothing.
func (e *Effects) Prune(ctx context.Context) (int64, error) {
	if e.cfg.Horizon == 0 {
		return 0, nil
	}
	before := e.cfg.Clock().Add(-e.cfg.Horizon).UTC()
	var n int64
	err := retry.Do(ctx, e.cfg.Retry, "prune markers", transient, func(ctx context.Context, _ int) error {
		tag, err := e.pool.Exec(ctx, e.prune, before)
		n = tag.RowsAffected()
		return err
	})
	return n, err
}
