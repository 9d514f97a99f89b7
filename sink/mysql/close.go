package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/streamledger/streamledger/internal/faults"
	"github.com/streamledger/streamledger/internal/retry"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/fold"
)

const (
	opWriteClose   = "write close"
	opUpsertLatest = "upsert latest"
	opRead         = "read"
)

// WriteClose writes the batches of one call in one READ COMMITTED transaction. It first
// locks the aggregates table's row of the locks table (SELECT ... FOR UPDATE), so that the
// close writes of one table run one at a time; reads the contributing topics, the progress
// and the stored rows the call touches in statements after it, each of which sees what the
// previous holder committed; plans the call; and writes the plan with
// multi-row upserts. Transient failures (deadlocks, lock wait timeouts, lost connections)
// are retried per the configured policy; a nil error means the transaction committed.
//
// Each call with at least one batch is reported to the [Config.Hooks] that implement
// sink.HookWriteClose, with what its transaction wrote.
func (s *Sink) WriteClose(ctx context.Context, batches ...sink.CloseBatch) error {
	return s.WriteCloseGated(ctx, nil, batches...)
}

// WriteCloseGated is WriteClose with a gate (see sink.GatedWindowWriter): the transaction
// calls gate once the plan is written and commits only if it returns nil. While gate blocks
// the transaction holds the table's lock row, so other writers' closes of the same table
// wait for it as well.
func (s *Sink) WriteCloseGated(ctx context.Context, gate func(context.Context) error, batches ...sink.CloseBatch) error {
	return fold.WriteCloseCall(s.cfg.Hooks, batches, func() (*fold.Plan, int, error) { return s.writeClose(ctx, gate, batches) })
}

// writeClose is WriteCloseGated without the report; it returns the plan of the last attempt
// and the attempts made.
func (s *Sink) writeClose(ctx context.Context, gate func(context.Context) error, batches []sink.CloseBatch) (plan *fold.Plan, attempts int, err error) {
	c, err := fold.NewCall(s.codec, s.cfg.Aggregates, batches)
	if err != nil {
		return nil, 0, err
	}
	err = retry.Do(ctx, s.cfg.Retry, opWriteClose, fold.Retryable(transient), func(ctx context.Context, n int) error {
		attempts = n
		now := sink.AtPrecision(s.cfg.Clock())
		cutoff, prune := s.pruner.Due(now)
		err := attemptTx(ctx, s.db, faults.Attempt{Op: opWriteClose, N: n}, func(ctx context.Context, tx *sql.Tx) error {
			if err := s.lock(ctx, tx); err != nil {
				return err
			}
			if prune {
				if _, err := tx.ExecContext(ctx, s.prune, timeArg(cutoff)); err != nil {
					return fmt.Errorf("prune folded windows: %w", err)
				}
			}
			if err := s.readProgressOf(ctx, tx, c); err != nil {
				return err
			}
			partials, folded, final, err := s.readStored(ctx, tx, c)
			if err != nil {
				return err
			}
			p, err := c.Plan(partials, folded, final)
			if err != nil {
				return err
			}
			plan = p
			if err := s.writePlan(ctx, tx, p, now); err != nil {
				return err
			}
			return fold.Gate(ctx, gate)
		})
		if err == nil && prune {
			s.pruner.Done(now)
		}
		return err
	})
	return plan, attempts, err
}

// lock locks the aggregates table's row of the locks table, adding it when Migrate has not.
func (s *Sink) lock(ctx context.Context, tx *sql.Tx) error {
	name := s.cfg.Aggregates.Table
	var got string
	err := tx.QueryRowContext(ctx, s.lockRead, name).Scan(&got)
	if errors.Is(err, sql.ErrNoRows) {
		_, err = tx.ExecContext(ctx, s.lockAdd, name) // the inserted row is locked until commit
	}
	if err != nil {
		return fmt.Errorf("lock %s: %w", quote(name), err)
	}
	return nil
}

// readProgressOf reads the contributing topics and the progress the call needs into c.
func (s *Sink) readProgressOf(ctx context.Context, tx *sql.Tx, c *fold.Call) error {
	var topics []string
	var topic string
	if err := query(ctx, tx, "read contributing topics", s.readTopics, nil, []any{&topic}, func() error {
		topics = append(topics, topic)
		return nil
	}); err != nil {
		return err
	}
	callTopics := c.Topics()
	args := make([]any, len(callTopics))
	for i, t := range callTopics {
		args[i] = t
	}
	var progress []fold.Progress
	var p fold.Progress
	var ct nullTime
	err := query(ctx, tx, "read progress", s.progressQuery(len(args)), args, []any{&p.Source.Topic, &p.Source.Partition, &ct, &p.Empty}, func() error {
		p.ClosedThrough = ct.Time
		progress = append(progress, p)
		return nil
	})
	if err != nil {
		return err
	}
	c.SetProgress(progress, topics)
	return nil
}

func (s *Sink) progressQuery(n int) string {
	return s.readProgress + inList(n) + fmt.Sprintf(readProgressEnd, quote(s.cfg.topicsTable()))
}

// readStored reads what c.Plan needs: the compact rows of the call's (window, source) pairs
// and of the windows complete after the call, the folded rows of those windows and of the
// call's, and which of the call's windows have merged rows.
func (s *Sink) readStored(ctx context.Context, tx *sql.Tx, c *fold.Call) ([]fold.Partials, []fold.Folded, []time.Time, error) {
	windows := c.Windows()
	through, bounded := c.Through()
	if len(windows) == 0 && !bounded {
		return nil, nil, nil, nil
	}
	starts, srcs := c.Pairs()
	var args []any
	if bounded {
		args = append(args, timeArg(through))
	}
	for i, src := range srcs {
		args = append(args, timeArg(starts[i]), src.Topic, src.Partition)
	}
	attrs := s.cfg.Aggregates.Attributes
	var partials []fold.Partials
	var p fold.Partials
	var start, end nullTime
	var blob []byte
	err := query(ctx, tx, "read stored partials", s.partialsQuery(bounded, len(srcs)), args,
		[]any{&start, &end, &p.Source.Topic, &p.Source.Partition, &blob}, func() error {
			// The compact rows stay encoded: the plan decodes each window's as it folds it.
			// Scan copies a []byte, so each row's blob is its own.
			p.Start, p.End, p.Blob = start.Time, end.Time, blob
			partials = append(partials, p)
			return nil
		})
	if err != nil {
		return nil, nil, nil, err
	}
	args = args[:0]
	for _, w := range windows {
		args = append(args, timeArg(w))
	}
	if bounded {
		args = append(args, timeArg(through))
	}
	var folded []fold.Folded
	var f fold.Folded
	err = query(ctx, tx, "read folded windows", s.foldedQuery(len(windows), bounded), args, []any{&start, &end, &blob}, func() error {
		f.Start, f.End = start.Time, end.Time
		bl, err := s.codec.Decode(blob, attrs)
		if err != nil {
			return fmt.Errorf("folded window at %s: %w", f.Start.Format(time.RFC3339), err)
		}
		f.Sources, f.Entries = bl.Sources, bl.Entries
		folded = append(folded, f)
		return nil
	})
	if err != nil || len(windows) == 0 {
		return partials, folded, nil, err
	}
	var final []time.Time
	err = query(ctx, tx, "read final windows", s.readFinal+inList(len(windows))+")", args[:len(windows)], []any{&start}, func() error {
		final = append(final, start.Time)
		return nil
	})
	return partials, folded, final, err
}

// partialsQuery selects the compact rows ending at or before a bound (when bounded) and
// those of n (window_start, topic, partition) pairs.
func (s *Sink) partialsQuery(bounded bool, n int) string {
	q := s.readPartials
	sep := ""
	if bounded {
		q, sep = q+"`window_end` <= ?", " OR "
	}
	for range n {
		q, sep = q+sep+"(`window_start` = ? AND `topic` = ? AND `partition` = ?)", " OR "
	}
	return q
}

// foldedQuery selects the folded rows of n windows and, when bounded, those of the windows
// whose compact rows end at or before the bound.
func (s *Sink) foldedQuery(n int, bounded bool) string {
	q := s.readFolded
	if n > 0 {
		q += "`window_start` IN (" + inList(n) + ")"
	}
	if bounded {
		if n > 0 {
			q += " OR "
		}
		q += "`window_start` IN (SELECT `window_start` FROM " + quote(s.cfg.PartialsTable) + " WHERE `window_end` <= ?)"
	}
	return q
}

// query runs q and calls fn after scanning each row into dst.
func query(ctx context.Context, tx *sql.Tx, what, q string, args, dst []any, fn func() error) error {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := rows.Scan(dst...); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if err := fn(); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
