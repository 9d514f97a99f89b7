package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// rowSet is a batch of rows for one upsert, readable by row (batch, copy, row by row) or by
// column (unnest).
type rowSet interface {
	Len() int
	// Row returns the values of row i in column order; the slice may be reused by the next
	// call.
	Row(i int) []any
	// Columns returns one slice per column, typed where possible.
	Columns() []any
}

// writeRows sends rs through u with strategy st inside tx.
func writeRows(ctx context.Context, tx pgx.Tx, u *upsert, rs rowSet, st Strategy) error {
	n := rs.Len()
	if n == 0 {
		return nil
	}
	switch st {
	case StrategyUnnest:
		if u.unnest == "" {
			return fmt.Errorf("postgres: upsert into %s: column types unknown", u.table)
		}
		if _, err := tx.Exec(ctx, u.unnest, rs.Columns()...); err != nil {
			return fmt.Errorf("upsert %d rows into %s (unnest): %w", n, u.table, err)
		}
	case StrategyCopy:
		if _, err := tx.Exec(ctx, u.createTemp); err != nil {
			return fmt.Errorf("create temporary table for %s: %w", u.table, err)
		}
		i := 0
		src := pgx.CopyFromFunc(func() ([]any, error) {
			if i >= n {
				return nil, nil
			}
			i++
			return rs.Row(i - 1), nil
		})
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{u.tmpName}, u.cols, src); err != nil {
			return fmt.Errorf("copy %d rows for %s: %w", n, u.table, err)
		}
		if _, err := tx.Exec(ctx, u.fromTemp); err != nil {
			return fmt.Errorf("upsert %d rows into %s (copy): %w", n, u.table, err)
		}
	case StrategyBatch:
		b := &pgx.Batch{}
		for i := range n {
			// Row may reuse its slice; the batch keeps the arguments until it is sent.
			b.Queue(u.values, append([]any(nil), rs.Row(i)...)...)
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("upsert %d rows into %s (batch): %w", n, u.table, err)
		}
	case StrategyRowByRow:
		for i := range n {
			if _, err := tx.Exec(ctx, u.values, rs.Row(i)...); err != nil {
				return fmt.Errorf("upsert row %d of %d into %s: %w", i, n, u.table, err)
			}
		}
	default:
		return fmt.Errorf("postgres: unknown strategy %v", st)
	}
	return nil
}
