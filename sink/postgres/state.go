package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/streamledger/streamledger/internal/faults"
	"github.com/streamledger/streamledger/internal/retry"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/latest"
	"github.com/streamledger/streamledger/sink/internal/lockorder"
)

// UpsertLatest writes rows into the state tables they name, declared in [Config.States], in
// one transaction: each table's rows collapsed to the newest row per key, sent in one order
// every writer uses (so that concurrent writers lock rows in the same order; see package
// lockorder), and guarded by WHERE EXCLUDED.observed_at >= stored observed_at. Each call is reported to
// the [Config.Hooks] that implement sink.HookUpsertLatest, once per table.
func (s *Sink) UpsertLatest(ctx context.Context, rows []sink.StateRow) error {
	return latest.Call(s.cfg.Hooks, rows, s.stateSpec, func(groups [][]sink.StateRow) (int, error) {
		return s.upsertLatest(ctx, groups)
	})
}

func (s *Sink) stateSpec(table string) (sink.StateSpec, bool) {
	st, ok := s.states[table]
	if !ok {
		return sink.StateSpec{}, false
	}
	return st.spec, true
}

// upsertLatest writes the prepared groups in one transaction; it returns the attempts made.
func (s *Sink) upsertLatest(ctx context.Context, groups [][]sink.StateRow) (attempts int, err error) {
	for i, g := range groups {
		groups[i] = lockorder.Rows(g)
	}
	err = retry.Do(ctx, s.cfg.Retry, opUpsertLatest, transient, func(ctx context.Context, n int) error {
		attempts = n
		return attemptTx(ctx, s.pool, faults.Attempt{Op: opUpsertLatest, N: n}, func(ctx context.Context, tx pgx.Tx) error {
			now := sink.AtPrecision(s.cfg.Clock())
			for _, g := range groups {
				st := s.states[g[0].Table]
				if s.strategy == strategyUnnest {
					if err := st.discoverTypes(ctx, tx, s.cfg.Schema); err != nil {
						return err
					}
				}
				rs := &stateRows{rows: g, updatedAt: st.spec.UpdatedAt != "", now: now}
				if err := writeRows(ctx, tx, st.u, rs, s.strategy); err != nil {
					return err
				}
			}
			return nil
		})
	})
	return attempts, err
}

// discoverTypes reads the column types of the state table from the catalog, once, for the
// unnest form of its upsert.
func (st *stateTable) discoverTypes(ctx context.Context, tx pgx.Tx, schema string) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.u.unnest != "" {
		return nil
	}
	rows, err := tx.Query(ctx, `SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a `+
		`WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped`, ident(schema, st.spec.Table))
	if err != nil {
		return fmt.Errorf("read column types of %s: %w", ident(schema, st.spec.Table), err)
	}
	types := make(map[string]string)
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			rows.Close()
			return fmt.Errorf("read column types of %s: %w", ident(schema, st.spec.Table), err)
		}
		types[name] = typ
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read column types of %s: %w", ident(schema, st.spec.Table), err)
	}
	out := make([]string, len(st.u.varying))
	for i, c := range st.u.varying {
		t, ok := types[c]
		if !ok {
			return fmt.Errorf("%w: state table %s has no column %q", sink.ErrInvalid, ident(schema, st.spec.Table), c)
		}
		out[i] = t
	}
	st.u.setTypes(out)
	return nil
}
