package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// mergedCopy streams the merged rows of windows folded for the first time into the merged
// table through one COPY, on a goroutine of its own, while the plan makes them: the plan
// merges the next chunk while Postgres inserts this one. It holds at most one chunk beside
// the one being copied. Nothing else may use the transaction until finish returns.
type mergedCopy struct {
	chunks chan *mergedRows
	done   chan error
	err    error
	ended  bool
	rows   int
}

// startCopy starts the COPY of merged rows in tx.
func (s *Sink) startCopy(ctx context.Context, tx pgx.Tx) *mergedCopy {
	c := &mergedCopy{chunks: make(chan *mergedRows, 1), done: make(chan error, 1)}
	go func() {
		bin, err := s.binaryMerged(ctx, tx)
		switch {
		case err != nil:
		case bin:
			err = s.copyBinary(ctx, tx, c.chunks)
		default:
			err = s.copyGeneric(ctx, tx, c.chunks)
		}
		c.done <- err
	}()
	return c
}

// copyBinary copies the chunks' rows in the binary format it encodes itself.
func (s *Sink) copyBinary(ctx context.Context, tx pgx.Tx, chunks <-chan *mergedRows) error {
	var cause error
	r := &binaryReader{next: chunkSource(ctx, chunks, &cause)}
	err := copyBinaryFrom(ctx, tx, s.merged.ident, s.merged.columns(), r)
	// The error CopyFrom returns after the rows ended early may be only the server's echo
	// of why, which callers cannot tell apart from a server error.
	if err != nil && cause != nil {
		err = cause
	}
	return err
}

// copyGeneric copies the chunks' rows with pgx's CopyFrom, which encodes them for whatever
// column types the table has.
func (s *Sink) copyGeneric(ctx context.Context, tx pgx.Tx, chunks <-chan *mergedRows) error {
	var cur *mergedRows
	var cause error // as in copyBinary
	i := 0
	src := pgx.CopyFromFunc(func() ([]any, error) {
		for cur == nil || i == cur.Len() {
			select {
			case next, ok := <-chunks:
				if !ok {
					return nil, nil
				}
				cur, i = next, 0
			case <-ctx.Done():
				cause = ctx.Err()
				return nil, cause
			}
		}
		i++
		return append(cur.Row(i-1), cur.Consts()...), nil
	})
	_, err := tx.CopyFrom(ctx, s.merged.ident, s.merged.columns(), src)
	if err != nil && cause != nil {
		err = cause
	}
	return err
}

// send hands rows to the COPY, waiting while it still holds a chunk besides the one it
// copies; it returns the COPY's error if the COPY ended first.
func (c *mergedCopy) send(rows *mergedRows) error {
	if c.ended {
		return fmt.Errorf("write close: merged rows to copy after the copy of %d rows ended", c.rows)
	}
	select {
	case c.chunks <- rows:
		c.rows += rows.Len()
		return nil
	case err := <-c.done:
		c.ended, c.err = true, c.wrap(err)
		close(c.chunks)
		if c.err == nil {
			c.err = fmt.Errorf("write close: the copy of merged rows ended after %d rows", c.rows)
		}
		return c.err
	}
}

// finish ends the COPY and returns its error; it may be called again, and on a nil
// mergedCopy, which returns nil.
func (c *mergedCopy) finish() error {
	if c == nil {
		return nil
	}
	if !c.ended {
		c.ended = true
		close(c.chunks)
		c.err = c.wrap(<-c.done)
	}
	return c.err
}

func (c *mergedCopy) wrap(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("write close: copy %d merged rows: %w", c.rows, err)
}
