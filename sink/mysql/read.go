package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

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
	out := make(map[sink.TopicPartition]time.Time, len(tps))
	if len(tps) == 0 {
		return out, nil
	}
	var q strings.Builder
	q.WriteString(s.progressOf)
	args := make([]any, 0, 2*len(tps))
	for i, tp := range tps {
		if i > 0 {
			q.WriteString(" OR ")
		}
		q.WriteString("(`topic` = ? AND `partition` = ?)")
		args = append(args, tp.Topic, tp.Partition)
	}
	q.WriteString(")")
	err := s.read(ctx, func(ctx context.Context) error {
		clear(out)
		rows, err := s.db.QueryContext(ctx, q.String(), args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var tp sink.TopicPartition
			var t nullTime
			if err := rows.Scan(&tp.Topic, &tp.Partition, &t); err != nil {
				return err
			}
			out[tp] = t.Time
		}
		return rows.Err()
	})
	return out, err
}

// CompleteThrough returns the minimum closed_through over the partitions of topics that hold
// windows back: every registered partition but those marked empty that have closed
// nothing. It is the zero time, with ok true, when one of them has closed nothing (no
// window of the topics is complete), and ok is false when none of them holds anything.
func (s *Sink) CompleteThrough(ctx context.Context, topics ...string) (time.Time, bool, error) {
	if len(topics) == 0 {
		return time.Time{}, false, nil
	}
	args := make([]any, len(topics))
	for i, t := range topics {
		args[i] = t
	}
	var through nullTime
	var open, n int64
	err := s.read(ctx, func(ctx context.Context) error {
		return s.db.QueryRowContext(ctx, s.completeThru+inList(len(args))+completeEnd, args...).Scan(&through, &open, &n)
	})
	switch {
	case err != nil || n == 0:
		return time.Time{}, false, err
	case open > 0 || !through.Valid:
		return time.Time{}, true, nil
	}
	return through.Time, true, nil
}

// Aggregate returns the merged row of k, with its readiness read in the same statement.
func (s *Sink) Aggregate(ctx context.Context, k sink.Key) (sink.Aggregate, bool, error) {
	var out []sink.Aggregate
	err := s.read(ctx, func(ctx context.Context) error {
		var err error
		out, err = s.scanAggregates(ctx, s.readAgg, timeArg(k.WindowStart), k.Dimension, k.DimensionID)
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
		out, err = s.scanAggregates(ctx, s.readAggs, timeArg(windowStart))
		return err
	})
	return out, err
}

func (s *Sink) scanAggregates(ctx context.Context, q string, args ...any) ([]sink.Aggregate, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	attrs := s.cfg.Aggregates.Attributes
	var out []sink.Aggregate
	var a sink.Aggregate
	var start, end, computed, through nullTime
	var open, holding int64
	vals := make([]sql.NullString, len(attrs))
	dst := []any{&start, &end, &a.Dimension, &a.DimensionID, &a.Count, &a.Mean, &a.Quantile, &a.Max, &a.Min, &computed}
	for i := range vals {
		dst = append(dst, &vals[i])
	}
	dst = append(dst, &open, &holding, &through)
	for rows.Next() {
		if err := rows.Scan(dst...); err != nil {
			return nil, err
		}
		r := a
		r.WindowStart, r.WindowEnd, r.ComputedAt = start.Time, end.Time, computed.Time
		r.Complete = holding == 0 || open == 0 && through.Valid && !r.WindowEnd.After(through.Time)
		for i, v := range vals {
			if v.Valid {
				if r.Attrs == nil {
					r.Attrs = make(map[string]string, len(attrs))
				}
				r.Attrs[attrs[i]] = v.String
			}
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Latest returns the stored row of a state table for the given key values. Values come
// back as the Go types of their columns' types (sink.ColumnType; for an untyped spec, the
// types the table's columns map to): string, int32, int64, float64, bool, time.Time in UTC
// and []byte.
func (s *Sink) Latest(ctx context.Context, table string, key ...any) (sink.StateRow, bool, error) {
	st, ok := s.states[table]
	if !ok {
		return sink.StateRow{}, false, fmt.Errorf("%w: state table %q is not in the sink's configuration", sink.ErrInvalid, table)
	}
	if len(key) != len(st.spec.Key) {
		return sink.StateRow{}, false, fmt.Errorf("%w: state table %q has %d key columns, got %d values", sink.ErrInvalid, table, len(st.spec.Key), len(key))
	}
	args := make([]any, len(key))
	for i, k := range key {
		args[i] = valueArg(k)
	}
	var out sink.StateRow
	found := false
	err := s.read(ctx, func(ctx context.Context) error {
		rows, err := s.db.QueryContext(ctx, st.read, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		found = false
		if !rows.Next() {
			return rows.Err()
		}
		row, err := st.scanRow(rows)
		if err != nil {
			return err
		}
		obs, ok := row[0].(time.Time)
		if !ok {
			return fmt.Errorf("observed-at column of %q holds %T, expected a timestamp", table, row[0])
		}
		out, found = sink.StateRow{Table: table, Key: key, ObservedAt: obs, Values: row[1:]}, true
		return rows.Err()
	})
	if err != nil {
		return sink.StateRow{}, false, err
	}
	return out, found, nil
}

// scanRow scans observed_at and the values of the current row, each converted to the Go
// type of its column.
func (st *stateTable) scanRow(rows *sql.Rows) ([]any, error) {
	cts, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	raw := make([]any, len(cts))
	dst := make([]any, len(cts))
	for i := range raw {
		dst[i] = &raw[i]
	}
	if err := rows.Scan(dst...); err != nil {
		return nil, err
	}
	types := make([]sink.ColumnType, 0, len(cts))
	types = append(types, sink.Timestamp)
	for _, c := range st.spec.Values {
		types = append(types, c.Type)
	}
	for i, v := range raw {
		t := types[i]
		if t == sink.Untyped {
			t = columnType(cts[i].DatabaseTypeName())
		}
		if raw[i], err = convert(v, t); err != nil {
			return nil, fmt.Errorf("column %q of %s: %w", cts[i].Name(), quote(st.spec.Table), err)
		}
	}
	return raw, nil
}

// columnType maps a MySQL type name to the portable type whose Go values it holds; Untyped
// leaves the driver's value as it is.
func columnType(dbType string) sink.ColumnType {
	switch dbType {
	case "CHAR", "VARCHAR", "TEXT", "TINYTEXT", "MEDIUMTEXT", "LONGTEXT", "ENUM", "SET", "JSON", "DECIMAL":
		return sink.Text
	case "TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT", "UNSIGNED TINYINT", "UNSIGNED SMALLINT",
		"UNSIGNED MEDIUMINT", "UNSIGNED INT", "YEAR":
		return sink.Int64
	case "FLOAT", "DOUBLE":
		return sink.Float64
	case "DATETIME", "TIMESTAMP", "DATE":
		return sink.Timestamp
	case "BINARY", "VARBINARY", "BLOB", "TINYBLOB", "MEDIUMBLOB", "LONGBLOB", "BIT":
		return sink.Bytes
	}
	return sink.Untyped
}

// convert returns the driver's value v (typed by the binary protocol, or text by the text
// protocol) as the Go type of t.
func convert(v any, t sink.ColumnType) (any, error) {
	if v == nil {
		return nil, nil
	}
	text, isText := v.([]byte)
	switch t {
	case sink.Text:
		if isText {
			return string(text), nil
		}
		return fmt.Sprint(v), nil
	case sink.Bytes:
		if isText {
			return text, nil
		}
	case sink.Int32, sink.Int64, sink.Bool:
		var n int64
		switch x := v.(type) {
		case int64:
			n = x
		case []byte:
			var err error
			if n, err = strconv.ParseInt(string(x), 10, 64); err != nil {
				return nil, err
			}
		default:
			return v, nil
		}
		switch t {
		case sink.Int32:
			return int32(n), nil
		case sink.Bool:
			return n != 0, nil
		}
		return n, nil
	case sink.Float64:
		switch x := v.(type) {
		case float32:
			return float64(x), nil
		case []byte:
			return strconv.ParseFloat(string(x), 64)
		}
	case sink.Timestamp:
		var nt nullTime
		if err := nt.Scan(v); err != nil {
			return nil, err
		}
		return nt.Time, nil
	}
	return v, nil
}
