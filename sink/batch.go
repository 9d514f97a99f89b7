package sink

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/streamledger/streamledger/internal/keyindex"
)

// CompareKeys orders keys by window start, dimension, then dimension id.
func CompareKeys(a, b Key) int {
	if c := a.WindowStart.Compare(b.WindowStart); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Dimension, b.Dimension); c != 0 {
		return c
	}
	return cmp.Compare(a.DimensionID, b.DimensionID)
}

// CompareSources orders partitions by topic, then partition: the order in which partials
// are merged.
func CompareSources(a, b TopicPartition) int {
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

// PrepareLatest validates rows against the specs of their tables (spec looks one up) and
// returns them grouped by table, the groups in table order. Each group is collapsed to the
// newest row per key, a later row in rows winning a tie, with observed-at times at
// [Precision] in UTC ([AtPrecision]), as are the times among their key and values: two rows
// of a key whose times differ only below it are a tie, resolved alike by every
// implementation. A group keeps the order of its keys' first appearance. A row of a table
// spec does not know, or one that does not fit its table's spec, is an error wrapping
// [ErrInvalid]. rows is not modified.
func PrepareLatest(rows []StateRow, spec func(table string) (StateSpec, bool)) ([][]StateRow, error) {
	groups, err := groupByTable(rows, spec)
	if err != nil {
		return nil, err
	}
	for g, rows := range groups {
		sp, _ := spec(rows[0].Table)
		if groups[g], err = latestOf(sp, rows); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(groups, func(a, b []StateRow) int { return cmp.Compare(a[0].Table, b[0].Table) })
	return groups, nil
}

// groupByTable splits rows by table, in the order of each table's first row, checking that
// spec knows every table. Rows of one table, the common case (a writer flushes table by
// table), come back as rows itself; otherwise each group is allocated once, at its size.
func groupByTable(rows []StateRow, spec func(table string) (StateSpec, bool)) ([][]StateRow, error) {
	index := make(map[string]int, 2)
	var sizes []int
	for i, r := range rows {
		g, ok := index[r.Table]
		if !ok {
			if _, known := spec(r.Table); !known {
				return nil, fmt.Errorf("%w: row %d: state table %q is not in the sink's configuration", ErrInvalid, i, r.Table)
			}
			g = len(sizes)
			index[r.Table] = g
			sizes = append(sizes, 0)
		}
		sizes[g]++
	}
	if len(sizes) <= 1 {
		if len(rows) == 0 {
			return nil, nil
		}
		return [][]StateRow{rows}, nil
	}
	groups := make([][]StateRow, len(sizes))
	for g, n := range sizes {
		groups[g] = make([]StateRow, 0, n)
	}
	for _, r := range rows {
		g := index[r.Table]
		groups[g] = append(groups[g], r)
	}
	return groups, nil
}

// latestOf validates the rows of one table against its spec and collapses them to the
// newest row per key.
func latestOf(spec StateSpec, rows []StateRow) ([]StateRow, error) {
	out := make([]StateRow, 0, len(rows))
	index := keyindex.New(DedupKey, len(rows), 0)
	for i, r := range rows {
		if len(r.Key) != len(spec.Key) {
			return nil, fmt.Errorf("%w: row %d for %q has %d key values, the spec has %d key columns", ErrInvalid, i, spec.Table, len(r.Key), len(spec.Key))
		}
		if len(r.Values) != len(spec.Values) {
			return nil, fmt.Errorf("%w: row %d for %q has %d values, the spec has %d value columns", ErrInvalid, i, spec.Table, len(r.Values), len(spec.Values))
		}
		if r.ObservedAt.IsZero() {
			return nil, fmt.Errorf("%w: row %d for %q has no observed-at time", ErrInvalid, i, spec.Table)
		}
		r.ObservedAt = AtPrecision(r.ObservedAt)
		r.Key, r.Values = timesAtPrecision(r.Key), timesAtPrecision(r.Values)
		if j, ok := index.Find(r.Key, len(out)); ok {
			if !r.ObservedAt.Before(out[j].ObservedAt) {
				out[j] = r
			}
			continue
		}
		out = append(out, r)
	}
	return out, nil
}

// timesAtPrecision returns vals with every time.Time at [Precision] in UTC: a copy when one
// changes, so that the caller's row is left as it was.
func timesAtPrecision(vals []any) []any {
	out := vals
	for i, v := range vals {
		if t, ok := v.(time.Time); ok && t != AtPrecision(t) {
			if &out[0] == &vals[0] {
				out = slices.Clone(vals)
			}
			out[i] = AtPrecision(t)
		}
	}
	return out
}

// DedupKey returns a comparable value that is equal for two key tuples exactly when their
// values have the same types and values (times compared as instants at [Precision], the
// precision at which they are stored). buf is scratch space
// that is returned for reuse.
func DedupKey(buf []byte, key []any) (any, []byte) {
	if len(key) == 1 {
		switch v := key[0].(type) {
		case string, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, bool, float32, float64:
			return v, buf
		case time.Time:
			return AtPrecision(v), buf
		}
	}
	for _, v := range key {
		buf = appendKeyValue(buf, v)
	}
	return compositeKey(buf), buf
}

// compositeKey keeps encoded tuples apart from single string keys in the same map.
type compositeKey string

func appendKeyValue(buf []byte, v any) []byte {
	switch v := v.(type) {
	case string:
		buf = append(buf, 's')
		buf = strconv.AppendInt(buf, int64(len(v)), 10)
		buf = append(buf, ':')
		return append(buf, v...)
	case []byte:
		buf = append(buf, 'b')
		buf = strconv.AppendInt(buf, int64(len(v)), 10)
		buf = append(buf, ':')
		return append(buf, v...)
	case time.Time:
		buf = append(buf, 't')
		return AtPrecision(v).AppendFormat(buf, time.RFC3339Nano)
	case nil:
		return append(buf, 'n')
	default:
		s := fmt.Sprintf("%T=%#v", v, v)
		buf = append(buf, 'x')
		buf = strconv.AppendInt(buf, int64(len(s)), 10)
		buf = append(buf, ':')
		return append(buf, s...)
	}
}
