package postgres

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/streamledger/streamledger/internal/faults"
	"github.com/streamledger/streamledger/sink"
)

// UpsertLatest writes rows into the state tables they name, declared in [Config.States], in
// one transaction: each table's rows collapsed to the newest row per key, sent in one order
// every writer uses (so that concurrent writers lock rows in the same order; see lockOrder),
// and guarded by WHERE EXCLUDED.observed_at >= stored observed_at. Each call is reported to
// the [Config.Hooks] that implement sink.HookUpsertLatest, once per table.
func (s *Sink) UpsertLatest(ctx context.Context, rows []sink.StateRow) error {
	start := time.Now()
	groups, err := sink.PrepareLatest(rows, s.stateSpec)
	attempts := 0
	if err == nil && len(groups) > 0 {
		attempts, err = s.upsertLatest(ctx, groups)
	}
	if len(s.cfg.Hooks) > 0 {
		reportLatest(s.cfg.Hooks, rows, groups, sink.UpsertLatestInfo{Attempts: attempts, Duration: time.Since(start), Err: err})
	}
	return err
}

// reportLatest reports an UpsertLatest call to hooks: info for each table written, or for
// the first row's table when the rows were refused.
func reportLatest(hooks []sink.Hook, rows []sink.StateRow, groups [][]sink.StateRow, info sink.UpsertLatestInfo) {
	if info.Err != nil || len(groups) == 0 {
		if len(rows) > 0 {
			info.Table = rows[0].Table
		}
		sink.ReportUpsertLatest(hooks, info)
		return
	}
	for _, g := range groups {
		info.Table, info.Rows = g[0].Table, len(g)
		sink.ReportUpsertLatest(hooks, info)
	}
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
		groups[i] = lockOrder(g)
	}
	err = s.cfg.Retry.Do(ctx, opUpsertLatest, transient, func(ctx context.Context, n int) error {
		attempts = n
		return attemptTx(ctx, s.pool, faults.Attempt{Op: opUpsertLatest, N: n}, func(ctx context.Context, tx pgx.Tx) error {
			now := sink.AtPrecision(s.cfg.Clock())
			for _, g := range groups {
				st := s.states[g[0].Table]
				if s.cfg.Strategy == StrategyUnnest {
					if err := st.discoverTypes(ctx, tx, s.cfg.Schema); err != nil {
						return err
					}
				}
				rs := &stateRows{rows: g, updatedAt: st.spec.UpdatedAt != "", now: now}
				if err := writeRows(ctx, tx, st.u, rs, s.cfg.Strategy); err != nil {
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

// lockOrder returns rows in the order every writer sends them: by a seedless hash of the
// key (keyHash), then by the key itself where two hashes are equal. Any total order of the
// keys avoids deadlocks between writers; this one sorts 16-byte (hash, index) pairs by an
// integer instead of the rows by their boxed key values, which took more than half of
// UpsertLatest's CPU in the 100x end-to-end bench (pointer chasing through []any).
func lockOrder(rows []sink.StateRow) []sink.StateRow {
	type keyed struct {
		h uint64
		i int
	}
	ord := make([]keyed, len(rows))
	for i, r := range rows {
		ord[i] = keyed{keyHash(r.Key), i}
	}
	slices.SortFunc(ord, func(a, b keyed) int {
		if a.h != b.h {
			return cmp.Compare(a.h, b.h)
		}
		return compareTuples(rows[a.i].Key, rows[b.i].Key)
	})
	out := make([]sink.StateRow, len(rows))
	for j, o := range ord {
		out[j] = rows[o.i]
	}
	return out
}

// keyHash hashes a key tuple: each value's type tag and bytes (times as Unix nanoseconds),
// anything else by its type name and printed form, as compareTuples orders it.
func keyHash(key []any) uint64 {
	h := newFNV()
	for _, v := range key {
		switch x := v.(type) {
		case string:
			h = h.byte('s').string(x).byte(0)
		case int64:
			h = h.byte('i').uint64(uint64(x))
		case int:
			h = h.byte('i').uint64(uint64(x))
		case int32:
			h = h.byte('i').uint64(uint64(x))
		case time.Time:
			h = h.byte('t').uint64(uint64(x.UnixNano()))
		default:
			h = h.byte('?').string(fmt.Sprintf("%T", v)).byte(0).string(fmt.Sprint(v)).byte(0)
		}
	}
	return uint64(h)
}

// compareTuples orders key tuples: values of the same basic type by value, anything else by
// type name and then by its printed form. Only consistency matters: every writer sends
// rows in the same order.
func compareTuples(a, b []any) int {
	for i := range min(len(a), len(b)) {
		if c := compareValues(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

func compareValues(a, b any) int {
	switch x := a.(type) {
	case string:
		if y, ok := b.(string); ok {
			return cmp.Compare(x, y)
		}
	case int64:
		if y, ok := b.(int64); ok {
			return cmp.Compare(x, y)
		}
	case int:
		if y, ok := b.(int); ok {
			return cmp.Compare(x, y)
		}
	case int32:
		if y, ok := b.(int32); ok {
			return cmp.Compare(x, y)
		}
	case time.Time:
		if y, ok := b.(time.Time); ok {
			return x.Compare(y)
		}
	}
	ta, tb := fmt.Sprintf("%T", a), fmt.Sprintf("%T", b)
	if c := cmp.Compare(ta, tb); c != 0 {
		return c
	}
	return cmp.Compare(fmt.Sprint(a), fmt.Sprint(b))
}
