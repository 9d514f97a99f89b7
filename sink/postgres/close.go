package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/window"
)

const (
	opWriteClose   = "write close"
	opUpsertLatest = "upsert latest"
	opRead         = "read"
)

// WriteClose writes b in one transaction: the partials; advisory locks on the buckets of
// b's keys (in ascending order, so writers cannot deadlock); the merged rows of b's keys
// recomputed from every stored partial of those keys, read after the locks; and b's
// closed_through. Transient failures are retried per the configured policy; a nil error
// means the transaction committed.
func (s *Sink) WriteClose(ctx context.Context, batches ...sink.CloseBatch) error {
	prepared, err := prepareCloses(s.cfg.Aggregates, batches)
	if err != nil || len(prepared) == 0 {
		return err
	}
	return s.cfg.Retry.Do(ctx, opWriteClose, IsTransient, func(ctx context.Context, n int) error {
		return attemptTx(ctx, s.pool, s.cfg.Hooks, Attempt{Op: opWriteClose, N: n}, func(ctx context.Context, tx pgx.Tx) error {
			for _, b := range prepared {
				if err := s.writeClose(ctx, tx, b); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// prepareCloses validates every batch (see sink.PrepareClose) and refuses a source that
// appears twice. Nothing is written unless every batch is valid.
func prepareCloses(spec sink.AggregateSpec, batches []sink.CloseBatch) ([]sink.CloseBatch, error) {
	out := make([]sink.CloseBatch, len(batches))
	seen := make(map[sink.TopicPartition]bool, len(batches))
	for i, b := range batches {
		if seen[b.Source] {
			return nil, fmt.Errorf("%w: two close batches for %s in one write", sink.ErrInvalid, b.Source)
		}
		seen[b.Source] = true
		var err error
		if out[i], err = sink.PrepareClose(spec, b); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *Sink) writeClose(ctx context.Context, tx pgx.Tx, b sink.CloseBatch) error {
	now := s.cfg.Clock().UTC()
	if len(b.Partials) == 0 {
		if _, err := tx.Exec(ctx, s.progress, b.Source.Topic, b.Source.Partition, b.ClosedThrough, now); err != nil {
			return fmt.Errorf("write progress of %s: %w", b.Source, err)
		}
		return nil
	}
	if s.cfg.Strategy == StrategyUnnest {
		done, err := s.writeNewClose(ctx, tx, b, now)
		if err != nil || done {
			return err
		}
		// Some row of the batch existed: the attempt was rolled back to before its first
		// write, and the general path below overwrites.
	}
	// The partition's own partials first, outside the locks: writers of different
	// partitions insert theirs in parallel. Only the recomputation below is serialized.
	rs := &partialRows{b: b, attrs: s.cfg.Aggregates.Attributes, now: now}
	if err := writeRows(ctx, tx, s.partials, rs, s.cfg.Strategy); err != nil {
		return err
	}
	stored, err := s.lockAndRead(ctx, tx, b)
	if err != nil {
		return err
	}
	merged, err := s.merge(b, stored, now)
	if err != nil {
		return err
	}
	if s.cfg.Strategy == StrategyUnnest {
		// The merged rows and the progress in one round trip.
		batch := &pgx.Batch{}
		batch.Queue(s.merged.unnest, append(merged.Columns(0, merged.Len()), merged.Consts()...)...)
		batch.Queue(s.progress, b.Source.Topic, b.Source.Partition, b.ClosedThrough, now)
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return fmt.Errorf("upsert %d merged rows into %s and progress of %s: %w", merged.Len(), s.merged.table, b.Source, err)
		}
		return nil
	}
	if err := writeRows(ctx, tx, s.merged, merged, s.cfg.Strategy); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, s.progress, b.Source.Topic, b.Source.Partition, b.ClosedThrough, now); err != nil {
		return fmt.Errorf("write progress of %s: %w", b.Source, err)
	}
	return nil
}

// Statements of the new-batch path (see writeNewClose).
const (
	// Plans made for the actual arrays: a generic plan estimates ten elements per array and
	// picks a nested loop of index probes where a hash join over the window's range is
	// several times cheaper.
	customPlans       = "SET LOCAL plan_cache_mode = force_custom_plan"
	newBatchSavepoint = "SAVEPOINT streamledger_new_batch"
	rollbackNewBatch  = "ROLLBACK TO SAVEPOINT streamledger_new_batch"
)

// writeNewClose writes b assuming that it is new: none of its partials is stored yet, which
// holds for every batch but a replay. The partials go in with a plain INSERT, and the merged
// row of every key that no other partition has written yet (as read under the locks) with
// another; the merged rows of the keys that other partitions share are rewritten with an
// UPDATE. A plain insert fails on a row that does exist, and the UPDATE counts the rows it
// found; on either surprise the work is rolled back to a savepoint taken before it, and
// writeNewClose reports false so that the general path writes the batch instead. The plain
// inserts cannot lose a concurrent writer's row: a partial row is written only by its own
// partition's batches (a second writer of the partition waits for the first and then
// fails), and a merged row only under its key's lock.
//
// The first round trip carries the partials, the locks and the read of the other
// partitions' partials; while the server works on it, the batch's own stats are decoded
// and summarized, which is already the merged row of every key no one else wrote.
func (s *Sink) writeNewClose(ctx context.Context, tx pgx.Tx, b sink.CloseBatch, now time.Time) (bool, error) {
	n := len(b.Partials)
	rs := &partialRows{b: b, attrs: s.cfg.Aggregates.Attributes, now: now}
	cols := rs.Columns(0, n)
	starts, dims, ids := cols[0], cols[1], cols[2]
	batch := &pgx.Batch{}
	batch.Queue(customPlans)
	batch.Queue(newBatchSavepoint)
	batch.Queue(s.partials.insert, append(cols, rs.Consts()...)...)
	batch.Queue(s.lock, s.lockClass, s.lockBuckets(b.Partials))
	batch.Queue(s.others, starts, dims, ids, b.Source.Topic, b.Source.Partition, false, b.Partials[0].WindowStart, b.Partials[n-1].WindowStart)
	br := tx.SendBatch(ctx, batch)
	own, alone, ownErr := s.summarizeOwn(b)
	others, err := func() ([][]storedPartial, error) {
		defer br.Close()
		for range 2 {
			if _, err := br.Exec(); err != nil {
				return nil, fmt.Errorf("start close of %s: %w", b.Source, err)
			}
		}
		if _, err := br.Exec(); err != nil {
			return nil, fmt.Errorf("insert %d partials into %s: %w", n, s.partials.table, err)
		}
		if _, err := br.Exec(); err != nil {
			return nil, fmt.Errorf("lock %d keys: %w", n, err)
		}
		return s.readStored(br, n)
	}()
	if isUniqueViolation(err) {
		return false, rollbackToNew(ctx, tx)
	}
	if err != nil {
		return false, err
	}
	if ownErr != nil {
		return false, ownErr
	}

	a := s.cfg.Aggregates
	na := len(a.Attributes)
	fresh := newMergedRows(n, na, now)
	shared := newMergedRows(0, na, now)
	ownAttrs := make([]*string, n*na) // the batch's attributes, as stored: the rows are new
	var parts []storedPartial
	var stats []*window.Stats
	for i, p := range b.Partials {
		mine := ownAttrs[i*na : (i+1)*na : (i+1)*na]
		for j, name := range a.Attributes {
			if v, ok := p.Attrs[name]; ok {
				mine[j] = &v
			}
		}
		if len(others[i]) == 0 {
			fresh.add(p.Key, p.WindowEnd, mine, alone[i])
			continue
		}
		parts = append(append(parts[:0], others[i]...), storedPartial{source: b.Source, attrs: mine})
		slices.SortFunc(parts, func(x, y storedPartial) int { return sink.CompareSources(x.source, y.source) })
		stats = stats[:0]
		for _, sp := range parts {
			st := own[i]
			if sp.source != b.Source {
				st = new(window.Stats)
				if err := st.UnmarshalBinary(sp.stats); err != nil {
					return false, fmt.Errorf("%w: stored partial of %s for %s/%s at %s: %w", sink.ErrInvalid, sp.source,
						p.Dimension, p.DimensionID, p.WindowStart.Format(time.RFC3339), err)
				}
			}
			stats = append(stats, st)
		}
		sum, err := sink.MergeStats(a.Quantile, stats...)
		if err != nil {
			return false, fmt.Errorf("merge %s/%s at %s: %w", p.Dimension, p.DimensionID, p.WindowStart.Format(time.RFC3339), err)
		}
		shared.add(p.Key, p.WindowEnd, firstAttrs(parts, na), sum)
	}

	batch = &pgx.Batch{}
	if fresh.Len() > 0 {
		batch.Queue(s.merged.insert, append(fresh.Columns(0, fresh.Len()), fresh.Consts()...)...)
	}
	if shared.Len() > 0 {
		// The merged rows of the shared keys exist (their partials were written with them,
		// under the same locks); an UPDATE rewrites them in place, where an upsert would
		// probe and lock each first.
		batch.Queue(s.mergedUpdate, append(shared.Columns(0, shared.Len()), now, b.Partials[0].WindowStart, b.Partials[n-1].WindowStart)...)
	}
	batch.Queue(s.progress, b.Source.Topic, b.Source.Partition, b.ClosedThrough, now)
	br = tx.SendBatch(ctx, batch)
	defer br.Close()
	if fresh.Len() > 0 {
		if _, err := br.Exec(); err != nil {
			br.Close()
			if isUniqueViolation(err) {
				return false, rollbackToNew(ctx, tx)
			}
			return false, fmt.Errorf("insert %d merged rows into %s: %w", fresh.Len(), s.merged.table, err)
		}
	}
	if shared.Len() > 0 {
		tag, err := br.Exec()
		if err != nil {
			return false, fmt.Errorf("update %d merged rows of %s: %w", shared.Len(), s.merged.table, err)
		}
		if tag.RowsAffected() != int64(shared.Len()) {
			// Some merged row is missing although partials of its key are stored.
			br.Close()
			return false, rollbackToNew(ctx, tx)
		}
	}
	if _, err := br.Exec(); err != nil {
		return false, fmt.Errorf("write progress of %s: %w", b.Source, err)
	}
	if err := br.Close(); err != nil {
		return false, fmt.Errorf("write close of %s: %w", b.Source, err)
	}
	return true, nil
}

// summarizeOwn decodes the stats of b's partials and summarizes each alone.
func (s *Sink) summarizeOwn(b sink.CloseBatch) ([]*window.Stats, []sink.Summary, error) {
	own := make([]*window.Stats, len(b.Partials))
	sums := make([]sink.Summary, len(b.Partials))
	backing := make([]window.Stats, len(b.Partials))
	for i, p := range b.Partials {
		own[i] = &backing[i]
		if err := own[i].UnmarshalBinary(p.Stats); err != nil {
			return nil, nil, fmt.Errorf("%w: partial %s/%s at %s: %w", sink.ErrInvalid, p.Dimension, p.DimensionID, p.WindowStart.Format(time.RFC3339), err)
		}
		var err error
		if sums[i], err = sink.MergeStats(s.cfg.Aggregates.Quantile, own[i]); err != nil {
			return nil, nil, fmt.Errorf("merge %s/%s at %s: %w", p.Dimension, p.DimensionID, p.WindowStart.Format(time.RFC3339), err)
		}
	}
	return own, sums, nil
}

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

func rollbackToNew(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, rollbackNewBatch); err != nil {
		return fmt.Errorf("roll back the new-batch path: %w", err)
	}
	return nil
}

// firstAttrs returns, per attribute, the first value in parts (ordered by source).
func firstAttrs(parts []storedPartial, na int) []*string {
	out := make([]*string, na)
	for j := range out {
		for _, sp := range parts {
			if sp.attrs[j] != nil {
				out[j] = sp.attrs[j]
				break
			}
		}
	}
	return out
}

// lockBuckets returns the sorted, distinct lock buckets of the partials' keys: FNV-1a (64
// bits) of the window start's nanoseconds (big endian), the dimension, a zero byte and the
// dimension id, modulo LockBuckets. Every writer of the same tables must map a key to the
// same bucket, so the mapping never changes.
func (s *Sink) lockBuckets(ps []sink.Partial) []int32 {
	out := make([]int32, 0, min(len(ps), s.cfg.LockBuckets))
	seen := make([]bool, s.cfg.LockBuckets)
	for _, p := range ps {
		h := newFNV().uint64(uint64(p.WindowStart.UnixNano())).string(p.Dimension).byte(0).string(p.DimensionID)
		bucket := int32(uint64(h) % uint64(s.cfg.LockBuckets))
		if !seen[bucket] {
			seen[bucket] = true
			out = append(out, bucket)
		}
	}
	slices.Sort(out)
	return out
}

// storedPartial is a stored partial read back for a merge; stats is nil for the batch's own.
type storedPartial struct {
	source sink.TopicPartition
	stats  []byte
	attrs  []*string
}

// lockAndRead takes the advisory locks of b's keys and then reads every stored partial of
// those keys: the batch's own (stats nil, attributes as stored after COALESCE) and the other
// partitions'. The two statements are pipelined, but the read is a statement of its own: in
// READ COMMITTED its snapshot is taken after the locks are granted, so it sees every partial
// committed by the writers that held them before.
func (s *Sink) lockAndRead(ctx context.Context, tx pgx.Tx, b sink.CloseBatch) ([][]storedPartial, error) {
	n := len(b.Partials)
	starts := make([]time.Time, n)
	dims := make([]string, n)
	ids := make([]string, n)
	for i, p := range b.Partials {
		starts[i], dims[i], ids[i] = p.WindowStart, p.Dimension, p.DimensionID
	}
	batch := &pgx.Batch{}
	batch.Queue(s.lock, s.lockClass, s.lockBuckets(b.Partials))
	batch.Queue(s.others, starts, dims, ids, b.Source.Topic, b.Source.Partition, s.lacksAttribute(b), starts[0], starts[n-1])
	br := tx.SendBatch(ctx, batch)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, fmt.Errorf("lock %d keys: %w", n, err)
	}
	return s.readStored(br, n)
}

// readStored reads the result of s.others for a batch of n keys: the stored partials of
// each key, by the key's index.
func (s *Sink) readStored(br pgx.BatchResults, n int) ([][]storedPartial, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, fmt.Errorf("read stored partials of %d keys: %w", n, err)
	}
	defer rows.Close()
	out := make([][]storedPartial, n)
	na := len(s.cfg.Aggregates.Attributes)
	var i int64
	var src sink.TopicPartition
	var stats []byte
	attrs := make([]*string, na)
	dst := []any{&i, &src.Topic, &src.Partition, &stats}
	for j := range attrs {
		dst = append(dst, &attrs[j])
	}
	var backing []*string // every row's attributes, in few allocations
	for rows.Next() {
		stats = nil // scanned bytes must not share a buffer with the previous row's
		if err := rows.Scan(dst...); err != nil {
			return nil, fmt.Errorf("read stored partials: %w", err)
		}
		if i < 1 || i > int64(n) {
			return nil, fmt.Errorf("read stored partials: key index %d outside the batch of %d", i, n)
		}
		sp := storedPartial{source: src, stats: stats}
		if na > 0 {
			if len(backing)+na > cap(backing) {
				backing = make([]*string, 0, max(n, 16)*na)
			}
			backing = append(backing, attrs...)
			sp.attrs = backing[len(backing)-na : len(backing) : len(backing)]
		}
		out[i-1] = append(out[i-1], sp)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read stored partials of %d keys: %w", n, err)
	}
	return out, nil
}

// lacksAttribute reports whether some partial of b does not carry every attribute.
func (s *Sink) lacksAttribute(b sink.CloseBatch) bool {
	for _, p := range b.Partials {
		for _, name := range s.cfg.Aggregates.Attributes {
			if _, ok := p.Attrs[name]; !ok {
				return true
			}
		}
	}
	return false
}

// merge recomputes the merged row of every key of b from the stored partials of the key (by
// the key's index), with b's own stats.
func (s *Sink) merge(b sink.CloseBatch, stored [][]storedPartial, now time.Time) (*mergedRows, error) {
	a := s.cfg.Aggregates
	out := newMergedRows(len(b.Partials), len(a.Attributes), now)
	var parts []storedPartial
	var stats [][]byte
	na := len(a.Attributes)
	for i, p := range b.Partials {
		parts = append(parts[:0], stored[i]...)
		if own := slices.IndexFunc(parts, func(sp storedPartial) bool { return sp.source == b.Source }); own >= 0 {
			parts[own].stats = p.Stats
		} else {
			// Not read back: the partial carries every attribute, so what is stored is
			// what it carries.
			sp := storedPartial{source: b.Source, stats: p.Stats, attrs: make([]*string, na)}
			for j, name := range a.Attributes {
				if v, ok := p.Attrs[name]; ok {
					sp.attrs[j] = &v
				}
			}
			parts = append(parts, sp)
		}
		slices.SortFunc(parts, func(x, y storedPartial) int { return sink.CompareSources(x.source, y.source) })
		stats = stats[:0]
		for _, sp := range parts {
			stats = append(stats, sp.stats)
		}
		sum, err := sink.Merge(a.Quantile, stats...)
		if err != nil {
			return nil, fmt.Errorf("merge %s/%s at %s: %w", p.Dimension, p.DimensionID, p.WindowStart.Format(time.RFC3339), err)
		}
		out.add(p.Key, p.WindowEnd, firstAttrs(parts, na), sum)
	}
	return out, nil
}
