package postgres

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/streamledger/streamledger/sink"
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
func (s *Sink) WriteClose(ctx context.Context, b sink.CloseBatch) error {
	b, err := sink.PrepareClose(s.cfg.Aggregates, b)
	if err != nil {
		return err
	}
	return s.cfg.Retry.Do(ctx, opWriteClose, IsTransient, func(ctx context.Context, n int) error {
		return attemptTx(ctx, s.pool, s.cfg.Hooks, Attempt{Op: opWriteClose, N: n}, func(ctx context.Context, tx pgx.Tx) error {
			return s.writeClose(ctx, tx, b)
		})
	})
}

func (s *Sink) writeClose(ctx context.Context, tx pgx.Tx, b sink.CloseBatch) error {
	now := s.cfg.Clock().UTC()
	if len(b.Partials) > 0 {
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
			batch.Queue(s.merged.unnest, append(merged.Columns(), merged.Consts()...)...)
			batch.Queue(s.progress, b.Source.Topic, b.Source.Partition, b.ClosedThrough, now)
			if err := tx.SendBatch(ctx, batch).Close(); err != nil {
				return fmt.Errorf("upsert %d merged rows into %s and progress of %s: %w", merged.Len(), s.merged.table, b.Source, err)
			}
			return nil
		}
		if err := writeRows(ctx, tx, s.merged, merged, s.cfg.Strategy); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(ctx, s.progress, b.Source.Topic, b.Source.Partition, b.ClosedThrough, now); err != nil {
		return fmt.Errorf("write progress of %s: %w", b.Source, err)
	}
	return nil
}

// lockBuckets returns the sorted, distinct lock buckets of the partials' keys.
func (s *Sink) lockBuckets(ps []sink.Partial) []int32 {
	out := make([]int32, 0, min(len(ps), s.cfg.LockBuckets))
	seen := make(map[int32]bool, cap(out))
	var ts [8]byte
	for _, p := range ps {
		h := fnv.New64a()
		binary.BigEndian.PutUint64(ts[:], uint64(p.WindowStart.UnixNano()))
		_, _ = h.Write(ts[:])
		_, _ = h.Write([]byte(p.Dimension))
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(p.DimensionID))
		bucket := int32(h.Sum64() % uint64(s.cfg.LockBuckets))
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
func (s *Sink) lockAndRead(ctx context.Context, tx pgx.Tx, b sink.CloseBatch) (map[sink.Key][]storedPartial, error) {
	n := len(b.Partials)
	starts := make([]time.Time, n)
	dims := make([]string, n)
	ids := make([]string, n)
	for i, p := range b.Partials {
		starts[i], dims[i], ids[i] = p.WindowStart, p.Dimension, p.DimensionID
	}
	batch := &pgx.Batch{}
	batch.Queue(s.lock, s.lockClass, s.lockBuckets(b.Partials))
	batch.Queue(s.others, starts, dims, ids, b.Source.Topic, b.Source.Partition, s.lacksAttribute(b))
	br := tx.SendBatch(ctx, batch)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, fmt.Errorf("lock %d keys: %w", n, err)
	}
	rows, err := br.Query()
	if err != nil {
		return nil, fmt.Errorf("read stored partials of %d keys: %w", n, err)
	}
	defer rows.Close()
	out := make(map[sink.Key][]storedPartial, len(b.Partials))
	na := len(s.cfg.Aggregates.Attributes)
	var k sink.Key
	var src sink.TopicPartition
	var stats []byte
	attrs := make([]*string, na)
	dst := []any{&k.WindowStart, &k.Dimension, &k.DimensionID, &src.Topic, &src.Partition, &stats}
	for i := range attrs {
		dst = append(dst, &attrs[i])
	}
	backing := make([]*string, 0, len(b.Partials)*na) // every row's attributes, in one allocation
	for rows.Next() {
		stats = nil // scanned bytes must not share a buffer with the previous row's
		if err := rows.Scan(dst...); err != nil {
			return nil, fmt.Errorf("read stored partials: %w", err)
		}
		sp := storedPartial{source: src, stats: stats}
		if na > 0 {
			backing = append(backing, attrs...)
			sp.attrs = backing[len(backing)-na : len(backing) : len(backing)]
		}
		key := k
		key.WindowStart = key.WindowStart.UTC()
		out[key] = append(out[key], sp)
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

// merge recomputes the merged row of every key of b from the stored partials of the key,
// with b's own stats.
func (s *Sink) merge(b sink.CloseBatch, stored map[sink.Key][]storedPartial, now time.Time) (*mergedRows, error) {
	a := s.cfg.Aggregates
	out := newMergedRows(len(b.Partials), len(a.Attributes), now)
	var parts []storedPartial
	var stats [][]byte
	na := len(a.Attributes)
	backing := make([]*string, len(b.Partials)*na) // every merged row's attributes
	for i, p := range b.Partials {
		parts = append(parts[:0], stored[p.Key]...)
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
		attrs := backing[i*na : (i+1)*na : (i+1)*na]
		for j := range attrs {
			for _, sp := range parts {
				if sp.attrs[j] != nil {
					attrs[j] = sp.attrs[j]
					break
				}
			}
		}
		out.add(p.Key, p.WindowEnd, attrs, sum)
	}
	return out, nil
}
