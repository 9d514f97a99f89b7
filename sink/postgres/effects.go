package postgres

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamledger/streamledger/sink"
)

const opApplyEffect = "apply effect"

// Effect applies one operation's effect inside the marker's transaction and returns the
// command tag of its write: an effect that touched no row is rolled back with its marker.
// It must use only tx, and must not commit or roll it back.
type Effect func(ctx context.Context, tx pgx.Tx) (pgconn.CommandTag, error)

// EffectConfig configures [Effects]. Zero fields take the defaults in brackets.
type EffectConfig struct {
	// Schema holds the marker table [public].
	Schema string
	// Table is the marker table [streamledger_markers].
	Table string
	// Horizon is how long markers are kept: [Effects.Prune] deletes only markers older than
	// it. Zero keeps markers forever.
	Horizon time.Duration
	// SourceRetention is how far back the source can redeliver (the topic's retention.ms).
	// When set, a non-zero Horizon shorter than it is refused with [sink.ErrHorizon]: an
	// operation replayed after its marker was pruned would be applied a second time.
	SourceRetention time.Duration
	// Retry bounds the retries of transient failures.
	Retry sink.RetryPolicy
	// Clock stamps markers and places the pruning horizon [time.Now].
	Clock func() time.Time
	// Rand provides the token that tells a call its own marker after a commit whose
	// acknowledgement was lost [crypto/rand.Reader].
	Rand io.Reader
	// Faults are called at fixed points of every attempt (fault injection in tests).
	Faults Faults
}

// Effects applies effects that are not naturally idempotent exactly once per operation ID,
// within the database and while markers are retained: the marker (operation ID,
// payload hash) and the effect commit in one transaction or not at all.
type Effects struct {
	pool *pgxpool.Pool
	cfg  EffectConfig

	insert, lookup, prune string
	table                 string
}

// NewEffects returns an effect sink writing markers through pool. It does not touch the
// database; call [Effects.Migrate] to create the marker table.
func NewEffects(pool *pgxpool.Pool, cfg EffectConfig) (*Effects, error) {
	if pool == nil {
		return nil, fmt.Errorf("%w: nil pool", sink.ErrInvalid)
	}
	if cfg.Schema == "" {
		cfg.Schema = "public"
	}
	if cfg.Table == "" {
		cfg.Table = "streamledger_markers"
	}
	if cfg.Horizon < 0 || cfg.SourceRetention < 0 {
		return nil, fmt.Errorf("%w: negative horizon %v or source retention %v", sink.ErrInvalid, cfg.Horizon, cfg.SourceRetention)
	}
	if cfg.Horizon != 0 && cfg.Horizon < cfg.SourceRetention {
		return nil, fmt.Errorf("%w: horizon %v, source retention %v", sink.ErrHorizon, cfg.Horizon, cfg.SourceRetention)
	}
	cfg.Retry = cfg.Retry.WithDefaults()
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	e := &Effects{pool: pool, cfg: cfg, table: ident(cfg.Schema, cfg.Table)}
	e.insert = fmt.Sprintf(`INSERT INTO %s ("op_id", "payload_hash", "token", "created_at") VALUES ($1, $2, $3, $4) `+
		`ON CONFLICT ("op_id") DO NOTHING RETURNING "op_id"`, e.table)
	e.lookup = fmt.Sprintf(`SELECT "payload_hash", "token" FROM %s WHERE "op_id" = $1`, e.table)
	e.prune = fmt.Sprintf(`DELETE FROM %s WHERE "created_at" < $1`, e.table)
	return e, nil
}

func (e *Effects) migrations() []migration {
	return []migration{{object: "markers:" + e.cfg.Table, steps: sqlSteps([]string{
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s ("op_id" text PRIMARY KEY, "payload_hash" bytea NOT NULL, `+
			`"token" bytea NOT NULL, "created_at" timestamptz NOT NULL)`, e.table),
		fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %s ON %s ("created_at")`, ident(e.cfg.Table+"_created_at"), e.table),
	})}}
}

// Migrate creates the marker table; idempotent and safe to run concurrently.
func (e *Effects) Migrate(ctx context.Context) error {
	return migrate(ctx, e.pool, e.cfg.Schema, e.migrations())
}

// Statements returns the SQL statements the effect sink generates.
func (e *Effects) Statements() []string {
	out := []string{e.insert, e.lookup, e.prune}
	for _, m := range e.migrations() {
		for _, st := range m.steps {
			out = append(out, st.sql...)
		}
	}
	return out
}

// errDuplicate ends an attempt that found the operation already committed.
var errDuplicate = errors.New("duplicate")

// Apply applies op's effect once. In one transaction it inserts the marker with ON
// CONFLICT DO NOTHING RETURNING, then runs effect only if the marker was accepted, and
// commits both. Results:
//
//   - [sink.Applied], nil: marker and effect committed by this call (also when a commit
//     whose acknowledgement was lost is confirmed by a retry);
//   - [sink.Duplicate], nil: the same ID and payload were committed before; no effect;
//   - an error wrapping [*sink.ConflictError]: same ID, different payload; no effect;
//   - an error wrapping [sink.ErrNoEffect] or the effect's error: rolled back, no marker;
//   - a [*sink.WriteError] otherwise: nothing may be assumed committed.
//
// Concurrent calls with the same ID are arbitrated by the marker's primary key: one
// applies, the others wait for it and report a duplicate (or apply, if it rolled back).
func (e *Effects) Apply(ctx context.Context, op sink.Operation, effect Effect) (sink.Outcome, error) {
	if op.ID == "" {
		return 0, fmt.Errorf("%w: operation without an ID", sink.ErrInvalid)
	}
	if effect == nil {
		return 0, fmt.Errorf("%w: operation %q without an effect", sink.ErrInvalid, op.ID)
	}
	hash := op.Hash()
	token := make([]byte, 16)
	if _, err := io.ReadFull(e.cfg.Rand, token); err != nil {
		return 0, fmt.Errorf("sink: token for operation %q: %w", op.ID, err)
	}
	outcome := sink.Applied
	err := e.cfg.Retry.Do(ctx, opApplyEffect, IsTransient, func(ctx context.Context, n int) error {
		outcome = sink.Applied
		err := attemptTx(ctx, e.pool, e.cfg.Faults, Attempt{Op: opApplyEffect, N: n}, func(ctx context.Context, tx pgx.Tx) error {
			var id string
			err := tx.QueryRow(ctx, e.insert, op.ID, hash[:], token, e.cfg.Clock().UTC()).Scan(&id)
			switch {
			case errors.Is(err, pgx.ErrNoRows):
				var stored, storedToken []byte
				if err := tx.QueryRow(ctx, e.lookup, op.ID).Scan(&stored, &storedToken); err != nil {
					return fmt.Errorf("read marker of %q: %w", op.ID, err)
				}
				if !bytes.Equal(stored, hash[:]) {
					return &sink.ConflictError{ID: op.ID, StoredHash: stored, GivenHash: hash[:]}
				}
				if !bytes.Equal(storedToken, token) {
					outcome = sink.Duplicate
				}
				return errDuplicate
			case err != nil:
				return fmt.Errorf("insert marker of %q: %w", op.ID, err)
			}
			if err := e.cfg.Faults.call(ctx, AfterMarker, Attempt{Op: opApplyEffect, N: n, PID: tx.Conn().PgConn().PID()}); err != nil {
				return err
			}
			tag, err := effect(ctx, tx)
			if err != nil {
				return fmt.Errorf("effect of %q: %w", op.ID, err)
			}
			if tag.RowsAffected() == 0 {
				return fmt.Errorf("%w: operation %q (%s)", sink.ErrNoEffect, op.ID, tag.String())
			}
			return nil
		})
		if errors.Is(err, errDuplicate) {
			return nil
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	return outcome, nil
}

// Prune deletes the markers older than the horizon and returns how many it deleted. A
// marker younger than the horizon is never deleted. With a zero horizon it deletes nothing.
func (e *Effects) Prune(ctx context.Context) (int64, error) {
	if e.cfg.Horizon == 0 {
		return 0, nil
	}
	before := e.cfg.Clock().Add(-e.cfg.Horizon).UTC()
	var n int64
	err := e.cfg.Retry.Do(ctx, "prune markers", IsTransient, func(ctx context.Context, _ int) error {
		tag, err := e.pool.Exec(ctx, e.prune, before)
		n = tag.RowsAffected()
		return err
	})
	return n, err
}
