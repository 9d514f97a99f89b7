package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/streamledger/streamledger/internal/retry"
	"github.com/streamledger/streamledger/sink"
)

// read runs fn with retries on transient failures; reads have no transaction of their own.
func (s *Sink) read(ctx context.Context, fn func(ctx context.Context) error) error {
	return retry.Do(ctx, s.cfg.Retry, opRead, transient, func(ctx context.Context, _ int) error { return fn(ctx) })
}

// ClosedThrough returns the stored closed_through of each of tps that has one: a partition
// that is registered but has closed nothing is left out.
func (s *Sink) ClosedThrough(ctx context.Context, tps ...sink.TopicPartition) (map[sink.TopicPartition]time.Time, error) {
	topics := make([]string, len(tps))
	parts := make([]int32, len(tps))
	for i, tp := range tps {
		topics[i], parts[i] = tp.Topic, tp.Partition
	}
	var out map[sink.TopicPartition]time.Time
	err := s.read(ctx, func(ctx context.Context) error {
		out = make(map[sink.TopicPartition]time.Time, len(tps))
		rows, err := s.pool.Query(ctx, s.progressOf, topics, parts)
		if err != nil {
			return err
		}
		var tp sink.TopicPartition
		var t time.Time
		_, err = pgx.ForEachRow(rows, []any{&tp.Topic, &tp.Partition, &t}, func() error {
			out[tp] = t.UTC()
			return nil
		})
		return err
	})
	return out, err
}

// CompleteThrough returns the minimum closed_through over the partitions of topics that hold
// windows back: every registered partition but those marked empty that have closed
// nothing. It is the zero time, with ok true, when one of them has closed nothing (no
// window of the topics is complete), and ok is false when none of them holds anything.
func (s *Sink) CompleteThrough(ctx context.Context, topics ...string) (time.Time, bool, error) {
	var t *time.Time
	var unknown *bool
	var n int64
	err := s.read(ctx, func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, s.completeThru, topics).Scan(&t, &unknown, &n)
	})
	switch {
	case err != nil || n == 0:
		return time.Time{}, false, err
	case unknown != nil && *unknown || t == nil:
		return time.Time{}, true, nil
	}
	return t.UTC(), true, nil
}

// Aggregate returns the merged row of k from the readiness view.
func (s *Sink) Aggregate(ctx context.Context, k sink.Key) (sink.Aggregate, bool, error) {
	var out []sink.Aggregate
	err := s.read(ctx, func(ctx context.Context) error {
		var err error
		out, err = s.scanAggregates(ctx, s.readAgg, k.WindowStart.UTC(), k.Dimension, k.DimensionID)
		return err
	})
	if err != nil || len(out) == 0 {
		return sink.Aggregate{}, false, err
	}
	return out[0], true, nil
}

// Aggregates returns the merged rows of the window starting at windowStart.
func (s *Sink) Aggregates(ctx context.Context, windowStart time.Time) ([]sink.Aggregate, error) {
	var out []sink.Aggregate
	err := s.read(ctx, func(ctx context.Context) error {
		var err error
		out, err = s.scanAggregates(ctx, s.readAggWindow, windowStart.UTC())
		return err
	})
	return out, err
}

func (s *Sink) scanAggregates(ctx context.Context, sql string, args ...any) ([]sink.Aggregate, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	attrs := s.cfg.Aggregates.Attributes
	var out []sink.Aggregate
	var a sink.Aggregate
	vals := make([]*string, len(attrs))
	dst := []any{&a.WindowStart, &a.WindowEnd, &a.Dimension, &a.DimensionID, &a.Count, &a.Mean, &a.Quantile, &a.Max, &a.Min, &a.ComputedAt}
	for i := range vals {
		dst = append(dst, &vals[i])
	}
	dst = append(dst, &a.Complete)
	_, err = pgx.ForEachRow(rows, dst, func() error {
		r := a
		r.WindowStart, r.WindowEnd, r.ComputedAt = a.WindowStart.UTC(), a.WindowEnd.UTC(), a.ComputedAt.UTC()
		for i, v := range vals {
			if v != nil {
				if r.Attrs == nil {
					r.Attrs = make(map[string]string, len(attrs))
				}
				r.Attrs[attrs[i]] = *v
			}
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

// Latest returns the stored row of a state table for the given key values.
func (s *Sink) Latest(ctx context.Context, table string, key ...any) (sink.StateRow, bool, error) {
	st, ok := s.states[table]
	if !ok {
		return sink.StateRow{}, false, fmt.Errorf("%w: state table %q is not in the sink's configuration", sink.ErrInvalid, table)
	}
	if len(key) != len(st.spec.Key) {
		return sink.StateRow{}, false, fmt.Errorf("%w: state table %q has %d key columns, got %d values", sink.ErrInvalid, table, len(st.spec.Key), len(key))
	}
	var out sink.StateRow
	found := false
	err := s.read(ctx, func(ctx context.Context) error {
		rows, err := s.pool.Query(ctx, st.read, key...)
		if err != nil {
			return err
		}
		defer rows.Close()
		found = false
		if rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				return err
			}
			obs, ok := vals[0].(time.Time)
			if !ok {
				return fmt.Errorf("observed-at column of %q holds %T, expected a timestamp", table, vals[0])
			}
			for i, v := range vals {
				if t, ok := v.(time.Time); ok {
					vals[i] = t.UTC()
				}
			}
			out = sink.StateRow{Table: table, Key: key, ObservedAt: obs.UTC(), Values: vals[1:]}
			found = true
		}
		return rows.Err()
	})
	if err != nil {
		return sink.StateRow{}, false, err
	}
	return out, found, nil
}
