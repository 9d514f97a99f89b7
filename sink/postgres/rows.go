package postgres

import (
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/streamledger/streamledger/sink"
)

// mergedRows are merged rows, column by column in the merged table's order;
// computed_at is the constant.
type mergedRows struct {
	now time.Time

	starts, ends []time.Time
	dims, ids    []string
	attrVals     [][]*string
	counts       []int64
	means, qs    []float64
	maxs, mins   []float64
	row          []any
}

func newMergedRows(n, attrs int, now time.Time) *mergedRows {
	m := &mergedRows{now: now}
	m.starts, m.ends = make([]time.Time, 0, n), make([]time.Time, 0, n)
	m.dims, m.ids = make([]string, 0, n), make([]string, 0, n)
	m.attrVals = make([][]*string, attrs)
	for i := range m.attrVals {
		m.attrVals[i] = make([]*string, 0, n)
	}
	m.counts = make([]int64, 0, n)
	m.means, m.qs = make([]float64, 0, n), make([]float64, 0, n)
	m.maxs, m.mins = make([]float64, 0, n), make([]float64, 0, n)
	return m
}

func (m *mergedRows) add(k sink.Key, end time.Time, attrs []*string, s sink.Summary) {
	m.starts, m.ends = append(m.starts, k.WindowStart), append(m.ends, end)
	m.dims, m.ids = append(m.dims, k.Dimension), append(m.ids, k.DimensionID)
	for i, a := range attrs {
		m.attrVals[i] = append(m.attrVals[i], a)
	}
	m.counts = append(m.counts, s.Count)
	m.means, m.qs = append(m.means, s.Mean), append(m.qs, s.Quantile)
	m.maxs, m.mins = append(m.maxs, s.Max), append(m.mins, s.Min)
}

func (m *mergedRows) Len() int { return len(m.starts) }

func (m *mergedRows) Row(i int) []any {
	m.row = append(m.row[:0], m.starts[i], m.ends[i], m.dims[i], m.ids[i])
	for _, a := range m.attrVals {
		if a[i] == nil {
			m.row = append(m.row, nil)
		} else {
			m.row = append(m.row, *a[i])
		}
	}
	return append(m.row, m.counts[i], m.means[i], m.qs[i], m.maxs[i], m.mins[i])
}

func (m *mergedRows) Columns(lo, hi int) []any {
	out := []any{m.starts[lo:hi], m.ends[lo:hi], m.dims[lo:hi], m.ids[lo:hi]}
	for _, a := range m.attrVals {
		out = append(out, a[lo:hi])
	}
	return append(out, m.counts[lo:hi], m.means[lo:hi], m.qs[lo:hi], m.maxs[lo:hi], m.mins[lo:hi])
}

func (m *mergedRows) Consts() []any { return []any{m.now} }

// stateRows are prepared state rows: key, observed-at, values; updated_at, when the spec
// has it, is the constant.
type stateRows struct {
	rows      []sink.StateRow
	updatedAt bool
	now       time.Time
	row       []any
	oids      []uint32 // the varying columns' types, for appendBinary
}

func (r *stateRows) Len() int { return len(r.rows) }

func (r *stateRows) Row(i int) []any {
	x := r.rows[i]
	r.row = append(append(append(r.row[:0], x.Key...), x.ObservedAt), x.Values...)
	return r.row
}

func (r *stateRows) Columns(lo, hi int) []any {
	rows := r.rows[lo:hi]
	if len(rows) == 0 {
		return nil
	}
	nk, nv := len(rows[0].Key), len(rows[0].Values)
	out := make([]any, 0, nk+1+nv)
	for j := range nk {
		col := make(valueArray, len(rows))
		for i, x := range rows {
			col[i] = x.Key[j]
		}
		out = append(out, col)
	}
	obs := make([]time.Time, len(rows))
	for i, x := range rows {
		obs[i] = x.ObservedAt
	}
	out = append(out, obs)
	for j := range nv {
		col := make(valueArray, len(rows))
		for i, x := range rows {
			col[i] = x.Values[j]
		}
		out = append(out, col)
	}
	return out
}

// valueArray is a column of state rows' values as a one-dimensional array parameter
// (pgtype.ArrayGetter): pgx encodes each element by its own type, taking the value as the row
// holds it, so that no element is converted or boxed again; a nil element is NULL.
type valueArray []any

func (a valueArray) Dimensions() []pgtype.ArrayDimension {
	return []pgtype.ArrayDimension{{Length: int32(len(a)), LowerBound: 1}}
}

func (a valueArray) Index(i int) any { return a[i] }

// IndexType reports no element type: the elements' own types choose their encoding.
func (a valueArray) IndexType() any { return nil }

func (r *stateRows) Consts() []any {
	if r.updatedAt {
		return []any{r.now}
	}
	return nil
}
