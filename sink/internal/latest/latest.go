// Package latest is the database-independent part of a sink's UpsertLatest: the rows of a
// call checked against the specs of their tables and collapsed to the newest row per key
// ([Prepare]), and the frame of the call that prepares, writes and reports it to the hooks
// ([Call]), so that every sink resolves the same rows alike.
package latest

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/streamledger/streamledger/internal/keyindex"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/report"
)

// Prepare validates rows against the specs of their tables (spec looks one up) and returns
// them grouped by table, the groups in table order. Each group is collapsed to the newest row
// per key, a later row in rows winning a tie, with observed-at times at sink.Precision in UTC
// (sink.AtPrecision), as are the times among their key and values: two rows of a key whose
// times differ only below it are a tie, resolved alike by every implementation. Keys are the
// same key by keyindex.Dedup. A group keeps the order of its keys' first appearance. A row of
// a table spec does not know, or one that does not fit its table's spec, is an error wrapping
// sink.ErrInvalid. rows is not modified.
func Prepare(rows []sink.StateRow, spec func(table string) (sink.StateSpec, bool)) ([][]sink.StateRow, error) {
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
	slices.SortFunc(groups, func(a, b []sink.StateRow) int { return cmp.Compare(a[0].Table, b[0].Table) })
	return groups, nil
}

// groupByTable splits rows by table, in the order of each table's first row, checking that
// spec knows every table. Rows of one table, the common case (a writer flushes table by
// table), come back as rows itself; otherwise each group is allocated once, at its size.
func groupByTable(rows []sink.StateRow, spec func(table string) (sink.StateSpec, bool)) ([][]sink.StateRow, error) {
	index := make(map[string]int, 2)
	var sizes []int
	for i, r := range rows {
		g, ok := index[r.Table]
		if !ok {
			if _, known := spec(r.Table); !known {
				return nil, fmt.Errorf("%w: row %d: state table %q is not in the sink's configuration", sink.ErrInvalid, i, r.Table)
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
		return [][]sink.StateRow{rows}, nil
	}
	groups := make([][]sink.StateRow, len(sizes))
	for g, n := range sizes {
		groups[g] = make([]sink.StateRow, 0, n)
	}
	for _, r := range rows {
		g := index[r.Table]
		groups[g] = append(groups[g], r)
	}
	return groups, nil
}

// latestOf validates the rows of one table against its spec and collapses them to the
// newest row per key.
func latestOf(spec sink.StateSpec, rows []sink.StateRow) ([]sink.StateRow, error) {
	out := make([]sink.StateRow, 0, len(rows))
	index := keyindex.New(len(rows), 0)
	for i, r := range rows {
		if len(r.Key) != len(spec.Key) {
			return nil, fmt.Errorf("%w: row %d for %q has %d key values, the spec has %d key columns", sink.ErrInvalid, i, spec.Table, len(r.Key), len(spec.Key))
		}
		if len(r.Values) != len(spec.Values) {
			return nil, fmt.Errorf("%w: row %d for %q has %d values, the spec has %d value columns", sink.ErrInvalid, i, spec.Table, len(r.Values), len(spec.Values))
		}
		if r.ObservedAt.IsZero() {
			return nil, fmt.Errorf("%w: row %d for %q has no observed-at time", sink.ErrInvalid, i, spec.Table)
		}
		r.ObservedAt = sink.AtPrecision(r.ObservedAt)
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

// timesAtPrecision returns vals with every time.Time at sink.Precision in UTC: a copy when
// one changes, so that the caller's row is left as it was.
func timesAtPrecision(vals []any) []any {
	out := vals
	for i, v := range vals {
		if t, ok := v.(time.Time); ok && t != sink.AtPrecision(t) {
			if &out[0] == &vals[0] {
				out = slices.Clone(vals)
			}
			out[i] = sink.AtPrecision(t)
		}
	}
	return out
}

// Call is the frame of an implementation's UpsertLatest: it prepares rows with [Prepare]
// against spec, calls write with the groups unless there are none, and reports the call to
// the hooks that implement sink.HookUpsertLatest: once per table written, or once for the
// first row's table when the call failed or wrote nothing. write returns the attempts it
// made.
func Call(hooks []sink.Hook, rows []sink.StateRow, spec func(table string) (sink.StateSpec, bool),
	write func(groups [][]sink.StateRow) (attempts int, err error)) error {
	groups, err := Prepare(rows, spec)
	attempts := 0
	if err == nil && len(groups) > 0 {
		attempts, err = write(groups)
	}
	if len(hooks) == 0 {
		return err
	}
	info := sink.UpsertLatestInfo{Attempts: attempts, Err: err}
	if err != nil || len(groups) == 0 {
		if len(rows) > 0 {
			info.Table = rows[0].Table
		}
		report.UpsertLatest(hooks, info)
		return err
	}
	for _, g := range groups {
		info.Table, info.Rows = g[0].Table, len(g)
		report.UpsertLatest(hooks, info)
	}
	return nil
}
