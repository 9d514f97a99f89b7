package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

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

// closeLockSQL takes the transaction-scoped advisory lock of an aggregates table.
const closeLockSQL = `SELECT pg_advisory_xact_lock($1::int8)`

// Statements of the merged rows' fast path: a window folded for the first time has no
// merged row, so its rows are copied in (COPY: no speculative insertion, and the rows
// streamed rather than encoded into statements); should one exist after all, the work since
// the savepoint is rolled back and the rows are upserted.
const (
	foldSavepoint = "SAVEPOINT streamledger_fold"
	rollbackFold  = "ROLLBACK TO SAVEPOINT streamledger_fold"
)

// WriteClose writes the batches of one call in one READ COMMITTED transaction. It first
// takes the aggregates table's advisory lock, so that the close writes of one table run one
// at a time; reads the contributing topics, the progress and the stored rows the call
// touches in statements after it; plans the call; and writes the plan.
// Transient failures are retried per the configured policy; a nil error means the
// transaction committed.
//
// Each call with at least one batch is reported to the [Config.Hooks] that implement
// sink.HookWriteClose, with what its transaction wrote.
func (s *Sink) WriteClose(ctx context.Context, batches ...sink.CloseBatch) error {
	return s.WriteCloseGated(ctx, nil, batches...)
}

// WriteCloseGated is WriteClose with a gate (see sink.GatedWindowWriter): the transaction
// calls gate once the plan is written and commits only if it returns nil. While gate blocks
// the transaction holds the advisory lock, so other writers' closes of the same table wait
// for it as well.
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
		err := attemptTx(ctx, s.pool, faults.Attempt{Op: opWriteClose, N: n}, func(ctx context.Context, tx pgx.Tx) error {
			if err := s.readProgressOf(ctx, tx, c, cutoff, prune); err != nil {
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

// readProgressOf takes the lock, prunes when due, and reads the contributing topics and the
// progress the call needs into c.
func (s *Sink) readProgressOf(ctx context.Context, tx pgx.Tx, c *fold.Call, cutoff time.Time, prune bool) error {
	b := &pgx.Batch{}
	b.Queue(closeLockSQL, s.closeLock)
	if prune {
		b.Queue(s.prune, cutoff)
	}
	b.Queue(s.readTopics)
	b.Queue(s.readProgress, c.Topics())
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return fmt.Errorf("lock %s: %w", ident(s.cfg.Schema, s.cfg.Aggregates.Table), err)
	}
	if prune {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("prune folded windows: %w", err)
		}
	}
	rows, err := br.Query()
	if err != nil {
		return fmt.Errorf("read contributing topics: %w", err)
	}
	topics, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("read contributing topics: %w", err)
	}
	rows, err = br.Query()
	if err != nil {
		return fmt.Errorf("read progress: %w", err)
	}
	var progress []fold.Progress
	var p fold.Progress
	var ct *time.Time
	_, err = pgx.ForEachRow(rows, []any{&p.Source.Topic, &p.Source.Partition, &ct, &p.Empty}, func() error {
		p.ClosedThrough = time.Time{}
		if ct != nil {
			p.ClosedThrough = ct.UTC()
		}
		progress = append(progress, p)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read progress: %w", err)
	}
	c.SetProgress(progress, topics)
	return nil
}

// readStored reads what c.Plan needs: the compact rows of the call's (window, source) pairs
// and of the windows complete after the call, the folded rows of those windows and of the
// call's, and which of the call's windows have merged rows.
func (s *Sink) readStored(ctx context.Context, tx pgx.Tx, c *fold.Call) ([]fold.Partials, []fold.Folded, []time.Time, error) {
	windows := c.Windows()
	through, ok := c.Through()
	if len(windows) == 0 && !ok {
		return nil, nil, nil, nil
	}
	var bound *time.Time // NULL: no window is complete
	if ok {
		bound = &through
	}
	starts, srcs := c.Pairs()
	topics := make([]string, len(srcs))
	parts := make([]int32, len(srcs))
	for i, src := range srcs {
		topics[i], parts[i] = src.Topic, src.Partition
	}
	b := &pgx.Batch{}
	b.Queue(s.readPartials, bound, starts, topics, parts)
	b.Queue(s.readFolded, windows, bound)
	b.Queue(s.readFinal, windows)
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	attrs := s.cfg.Aggregates.Attributes
	// The compact rows stay encoded: the plan decodes each window's as it folds it.
	var partials []fold.Partials
	var p fold.Partials
	var blob []byte
	err := forEach(br, "read stored partials", []any{&p.Start, &p.End, &p.Source.Topic, &p.Source.Partition, &blob}, func() error {
		p.Blob = blob
		partials = append(partials, p)
		blob = nil // the next row's bytes must not share this row's buffer
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	var folded []fold.Folded
	var f fold.Folded
	err = forEach(br, "read folded windows", []any{&f.Start, &f.End, &blob}, func() error {
		bl, err := s.codec.Decode(blob, attrs)
		if err != nil {
			return fmt.Errorf("folded window at %s: %w", f.Start.Format(time.RFC3339), err)
		}
		f.Sources, f.Entries = bl.Sources, bl.Entries
		folded = append(folded, f)
		blob = nil
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	var final []time.Time
	var w time.Time
	err = forEach(br, "read final windows", []any{&w}, func() error {
		final = append(final, w)
		return nil
	})
	return partials, folded, final, err
}

// forEach reads the next result of br row by row into dst.
func forEach(br pgx.BatchResults, what string, dst []any, fn func() error) error {
	rows, err := br.Query()
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if _, err := pgx.ForEachRow(rows, dst, fn); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// writePlan writes a plan. The merged rows of windows folded for the first time go in with
// COPY after a savepoint; on a unique violation the work is rolled back to it and written
// again with upserts.
func (s *Sink) writePlan(ctx context.Context, tx pgx.Tx, p *fold.Plan, now time.Time) error {
	err := s.sendPlan(ctx, tx, p, now, p.Inserts())
	if !isUniqueViolation(err) {
		return err
	}
	if _, err := tx.Exec(ctx, rollbackFold); err != nil {
		return fmt.Errorf("roll back the fold's fast path: %w", err)
	}
	return s.sendPlan(ctx, tx, p, now, false)
}

// flushRows is about how many upserted merged rows one round trip of a close write carries.
// A plan makes the rows of a large window as they are sent (fold.Plan.Merged), so that
// neither the rows nor the statements encoding them are held whole; a plan of fewer rows goes
// in one round trip.
const flushRows = 4 * unnestChunk

// sendPlan sends every write of p: the merged rows as the plan makes them, a round trip
// every flushRows or so, then the rest in one batch. With plain, the merged rows of windows
// folded for the first time are copied in after a savepoint (COPY streams them, and skips
// the speculative insertion of an upsert); otherwise every merged row is upserted.
func (s *Sink) sendPlan(ctx context.Context, tx pgx.Tx, p *fold.Plan, now time.Time, plain bool) error {
	b := &pgx.Batch{}
	na := len(s.cfg.Aggregates.Attributes)
	if plain {
		if _, err := tx.Exec(ctx, foldSavepoint); err != nil {
			return fmt.Errorf("write close: savepoint: %w", err)
		}
	}
	sent, queued := 0, 0
	var cp *mergedCopy
	folded, err := p.Merged(unnestChunk, func(rows []fold.Row, insert bool) error {
		if plain && insert {
			if cp == nil {
				cp = s.startCopy(ctx, tx)
			}
			return cp.send(mergedOf(rows, na, now))
		}
		if err := cp.finish(); err != nil { // the upserts follow the copied rows
			return err
		}
		queueRows(b, s.merged.unnest, mergedOf(rows, na, now))
		if queued += len(rows); queued < flushRows {
			return nil
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("write close: merged rows %d to %d: %w", sent, sent+queued, err)
		}
		sent, queued, b = sent+queued, 0, &pgx.Batch{}
		return nil
	})
	if cerr := cp.finish(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if len(p.Delete) > 0 {
		b.Queue(s.partialsDel, p.Delete)
	}
	if len(p.Partials) > 0 {
		args, err := s.partialArgs(p.Partials, now)
		if err != nil {
			return err
		}
		b.Queue(s.partialsPut, args...)
	}
	if len(folded) > 0 {
		b.Queue(s.foldedPut, foldedArgs(folded, now)...)
	}
	if len(p.Progress) > 0 {
		b.Queue(s.progressPut, progressArgs(p.Progress, now)...)
	}
	if len(p.Topics) > 0 {
		b.Queue(s.topicsPut, p.Topics, now)
	}
	if b.Len() == 0 {
		return nil
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("write close: %d merged rows, %d compact rows, %d folded windows: %w",
			sent+queued, len(p.Partials), len(folded), err)
	}
	return nil
}

// queueRows queues sql (an unnest statement of the merged table) for rs, in chunks.
func queueRows(b *pgx.Batch, sql string, rs rowSet) {
	for lo := 0; lo < rs.Len(); lo += unnestChunk {
		hi := min(lo+unnestChunk, rs.Len())
		b.Queue(sql, append(rs.Columns(lo, hi), rs.Consts()...)...)
	}
}

func mergedOf(rows []fold.Row, attrs int, now time.Time) *mergedRows {
	m := newMergedRows(len(rows), attrs, now)
	for _, r := range rows {
		m.add(r.Key, r.End, r.Attrs, r.Summary)
	}
	return m
}

func (s *Sink) partialArgs(ps []fold.Partials, now time.Time) ([]any, error) {
	n := len(ps)
	starts, ends := make([]time.Time, n), make([]time.Time, n)
	topics, parts, keys := make([]string, n), make([]int32, n), make([]int32, n)
	blobs := make([][]byte, n)
	for i, p := range ps {
		blob, err := s.codec.Encode(nil, s.cfg.Aggregates.Attributes, fold.Blob{Entries: p.Entries})
		if err != nil {
			return nil, err
		}
		starts[i], ends[i], topics[i], parts[i], keys[i], blobs[i] = p.Start, p.End, p.Source.Topic, p.Source.Partition, int32(len(p.Entries)), blob
	}
	return []any{starts, topics, parts, ends, keys, blobs, now}, nil
}

func foldedArgs(fs []fold.FoldedBlob, now time.Time) []any {
	n := len(fs)
	starts, ends := make([]time.Time, n), make([]time.Time, n)
	keys, blobs := make([]int32, n), make([][]byte, n)
	for i, f := range fs {
		starts[i], ends[i], keys[i], blobs[i] = f.Start, f.End, int32(f.Keys), f.Blob
	}
	return []any{starts, ends, keys, blobs, now}
}

func progressArgs(ps []fold.Progress, now time.Time) []any {
	n := len(ps)
	topics, parts := make([]string, n), make([]int32, n)
	through, empty := make([]*time.Time, n), make([]bool, n)
	for i, p := range ps {
		topics[i], parts[i], empty[i] = p.Source.Topic, p.Source.Partition, p.Empty
		if !p.ClosedThrough.IsZero() {
			through[i] = &p.ClosedThrough
		}
	}
	return []any{topics, parts, through, empty, now}
}

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}
