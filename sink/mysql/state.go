package mysql

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/streamledger/streamledger/internal/faults"
	"github.com/streamledger/streamledger/internal/retry"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/latest"
	"github.com/streamledger/streamledger/sink/internal/lockorder"
)

// UpsertLatest writes rows into the state tables they name, declared in [Config.States], in
// one transaction: each table's rows collapsed to the newest row per key (latest.Prepare,
// times at sink.Precision), sent in the order every writer uses (package lockorder), so
// that concurrent writers lock rows in one order, as multi-row INSERT ... ON DUPLICATE KEY
// UPDATE statements whose every assignment is guarded by VALUES(observed_at) >= observed_at.
// Each call is reported to the [Config.Hooks] that implement sink.HookUpsertLatest, once per
// table.
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
		return attemptTx(ctx, s.db, faults.Attempt{Op: opUpsertLatest, N: n}, func(ctx context.Context, tx *sql.Tx) error {
			at := timeArg(s.cfg.Clock())
			for _, g := range groups {
				if err := s.states[g[0].Table].write(ctx, tx, s.cfg.MaxStatementBytes, g, at); err != nil {
					return err
				}
			}
			return nil
		})
	})
	return attempts, err
}

// write sends rows (of this table, prepared) through the guarded upsert; at is updated_at.
func (st *stateTable) write(ctx context.Context, tx *sql.Tx, maxBytes int, rows []sink.StateRow, at any) error {
	updated := st.spec.UpdatedAt != ""
	err := st.upsert.exec(ctx, tx, maxBytes, len(rows), func(i int, dst []any) []any {
		r := rows[i]
		for _, k := range r.Key {
			dst = append(dst, valueArg(k))
		}
		dst = append(dst, timeArg(r.ObservedAt))
		for _, v := range r.Values {
			dst = append(dst, valueArg(v))
		}
		if updated {
			dst = append(dst, at)
		}
		return dst
	})
	if err != nil {
		return fmt.Errorf("upsert %d rows into %s: %w", len(rows), quote(st.spec.Table), err)
	}
	return nil
}
