package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// strategy is how a batch of state rows reaches its upsert. Every Sink uses strategyCopy,
// the zero value (see the package documentation, Strategies); the others stay so that the
// package's tests and benchmarks can compare them on the same rows.
type strategy int

const (
	// strategyCopy copies the rows into a temporary table (dropped at commit) and upserts
	// them with one INSERT ... SELECT ... ON CONFLICT.
	strategyCopy strategy = iota
	// strategyUnnest sends INSERT ... SELECT FROM unnest($1::type[], ...) ON CONFLICT
	// statements with one array parameter per column, of at most unnestChunk rows each.
	strategyUnnest
	// strategyBatch queues one INSERT ... VALUES ... ON CONFLICT per row in a pgx.Batch,
	// sent as one pipeline.
	strategyBatch
)

func (s strategy) String() string {
	switch s {
	case strategyCopy:
		return "copy"
	case strategyUnnest:
		return "unnest"
	case strategyBatch:
		return "batch"
	default:
		return fmt.Sprintf("strategy(%d)", int(s))
	}
}

// rowSet is a batch of rows for one upsert, readable by row (batch, copy) or by column
// (unnest). Rows hold the varying columns; Consts the constant ones.
type rowSet interface {
	Len() int
	// Row returns the varying values of row i; the slice may be reused by the next call.
	Row(i int) []any
	// Columns returns one slice per varying column of rows [lo, hi), typed where possible.
	Columns(lo, hi int) []any
	// Consts returns the values of the constant columns.
	Consts() []any
}

// unnestChunk bounds the rows of one unnest statement. A statement's column arrays and its
// Bind message are built whole in memory while it is sent, several times the rows' size, so
// an unbounded statement would hold a large upsert's rows several times over. Past a few
// thousand rows a statement gains nothing more from its size.
const unnestChunk = 8192

// writeRows sends rs through u with strategy st inside tx.
func writeRows(ctx context.Context, tx pgx.Tx, u *upsert, rs rowSet, st strategy) error {
	n := rs.Len()
	if n == 0 {
		return nil
	}
	switch st {
	case strategyUnnest:
		if u.unnest == "" {
			return fmt.Errorf("postgres: upsert into %s: column types unknown", u.table)
		}
		for lo := 0; lo < n; lo += unnestChunk {
			hi := min(lo+unnestChunk, n)
			if _, err := tx.Exec(ctx, u.unnest, append(rs.Columns(lo, hi), rs.Consts()...)...); err != nil {
				return fmt.Errorf("upsert rows %d to %d of %d into %s (unnest): %w", lo, hi-1, n, u.table, err)
			}
		}
	case strategyCopy:
		if err := copyRows(ctx, tx, u, rs); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, u.fromTemp, rs.Consts()...); err != nil {
			return fmt.Errorf("upsert %d rows into %s (copy): %w", n, u.table, err)
		}
	case strategyBatch:
		b := &pgx.Batch{}
		consts := rs.Consts()
		for i := range n {
			// Row may reuse its slice; the batch keeps the arguments until it is sent.
			b.Queue(u.values, append(append([]any(nil), rs.Row(i)...), consts...)...)
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("upsert %d rows into %s (batch): %w", n, u.table, err)
		}
	default:
		return fmt.Errorf("postgres: unknown strategy %v", st)
	}
	return nil
}

// copyRows creates u's temporary table (dropped at commit) and copies rs's varying columns
// into it: state rows in the binary format appendValue writes when every value fits its
// column's type, other rows with pgx's CopyFrom.
func copyRows(ctx context.Context, tx pgx.Tx, u *upsert, rs rowSet) error {
	n := rs.Len()
	if _, err := tx.Exec(ctx, u.createTemp); err != nil {
		return fmt.Errorf("create temporary table for %s: %w", u.table, err)
	}
	if sr, ok := rs.(*stateRows); ok {
		oids, err := u.columnTypes(ctx, tx)
		if err != nil {
			return err
		}
		if sr.fitBinary(oids[:len(u.varying)]) {
			if err := copyBinaryFrom(ctx, tx, pgx.Identifier{u.tmpName}, u.varying, &binaryReader{next: onceSource(sr)}); err != nil {
				return fmt.Errorf("copy %d rows for %s: %w", n, u.table, err)
			}
			return nil
		}
	}
	i := 0
	src := pgx.CopyFromFunc(func() ([]any, error) {
		if i >= n {
			return nil, nil
		}
		i++
		return rs.Row(i - 1), nil
	})
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{u.tmpName}, u.varying, src); err != nil {
		return fmt.Errorf("copy %d rows for %s: %w", n, u.table, err)
	}
	return nil
}
