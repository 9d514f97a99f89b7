package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/streamledger/streamledger/sink"
)

// maxPlaceholders is the most parameters one prepared statement may have (the protocol's
// 16-bit count).
const maxPlaceholders = 65535

// dateTimeLayout is how times travel, as DATETIME(6) literals in UTC. Times are sent as
// text rather than time.Time so that the driver's loc setting (which converts time.Time
// parameters to its location) cannot shift them: the stored value is always UTC.
const dateTimeLayout = "2006-01-02 15:04:05.000000"

// timeArg returns t as a DATETIME(6) parameter in UTC at sink.Precision; the zero time is
// NULL.
func timeArg(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return sink.AtPrecision(t).Format(dateTimeLayout)
}

// valueArg returns v as a parameter: times as timeArg does, anything else as it is.
func valueArg(v any) any {
	if t, ok := v.(time.Time); ok {
		return timeArg(t)
	}
	return v
}

// nullTime scans a DATETIME column whatever the DSN says: as text (parseTime=false) or as a
// time.Time the driver built in its loc (parseTime=true), whose wall clock is the stored
// UTC value. Valid is false for NULL.
type nullTime struct {
	Time  time.Time
	Valid bool
}

func (n *nullTime) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*n = nullTime{}
		return nil
	case time.Time:
		y, mo, d := v.Date()
		h, mi, s := v.Clock()
		n.Time, n.Valid = time.Date(y, mo, d, h, mi, s, v.Nanosecond(), time.UTC), true
		return nil
	case []byte:
		return n.parse(string(v))
	case string:
		return n.parse(v)
	}
	return fmt.Errorf("mysql: scan %T into a time", src)
}

func (n *nullTime) parse(s string) error {
	t, err := time.ParseInLocation("2006-01-02 15:04:05.999999", s, time.UTC)
	if err != nil {
		return fmt.Errorf("mysql: scan time %q: %w", s, err)
	}
	n.Time, n.Valid = t, true
	return nil
}

// rowsStmt is a multi-row INSERT: head "INSERT INTO t (c1, c2)", one "(?, ?)" per row, and
// tail (ON DUPLICATE KEY UPDATE ...). A batch is sent in chunks that stay under the
// placeholder limit and a byte bound, each chunk one statement of the caller's transaction.
type rowsStmt struct {
	head, tail string
	cols       int

	mu    sync.Mutex
	cache map[int]string // statement text by row count, for the common chunk sizes
}

func newRowsStmt(table string, cols []string, tail string) *rowsStmt {
	return &rowsStmt{head: fmt.Sprintf("INSERT INTO %s (%s) VALUES ", quote(table), quoteAll(cols)), tail: tail, cols: len(cols)}
}

// text returns the statement for n rows.
func (r *rowsStmt) text(n int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if q, ok := r.cache[n]; ok {
		return q
	}
	row := "(" + strings.Repeat("?, ", r.cols-1) + "?)"
	var b strings.Builder
	b.Grow(len(r.head) + n*(len(row)+2) + len(r.tail) + 1)
	b.WriteString(r.head)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
	}
	if r.tail != "" {
		b.WriteString(" ")
		b.WriteString(r.tail)
	}
	q := b.String()
	if r.cache == nil {
		r.cache = map[int]string{}
	}
	if len(r.cache) < 16 {
		r.cache[n] = q
	}
	return q
}

// sample is the statement text for a few rows, for review.
func (r *rowsStmt) sample() string { return r.text(2) }

// exec sends n rows; row(i, dst) appends the parameters of row i to dst.
func (r *rowsStmt) exec(ctx context.Context, tx *sql.Tx, maxBytes, n int, row func(i int, dst []any) []any) error {
	perStmt := maxPlaceholders / r.cols
	args := make([]any, 0, min(n, perStmt)*r.cols)
	lo, size := 0, 0
	flush := func(hi int) error {
		if hi == lo {
			return nil
		}
		if _, err := tx.ExecContext(ctx, r.text(hi-lo), args...); err != nil {
			return fmt.Errorf("rows %d to %d of %d: %w", lo, hi-1, n, err)
		}
		lo, size, args = hi, 0, args[:0]
		return nil
	}
	for i := range n {
		from := len(args)
		args = row(i, args)
		rowBytes := argBytes(args[from:])
		if i > lo && (i-lo == perStmt || size+rowBytes > maxBytes) {
			kept := append([]any(nil), args[from:]...)
			args = args[:from]
			if err := flush(i); err != nil {
				return err
			}
			args = append(args, kept...)
		}
		size += rowBytes
	}
	return flush(n)
}

// argBytes estimates the bytes parameters take on the wire.
func argBytes(args []any) int {
	n := 0
	for _, a := range args {
		switch v := a.(type) {
		case string:
			n += len(v) + 3
		case []byte:
			n += len(v) + 3
		default:
			n += 9
		}
	}
	return n
}

// quoteAll quotes each name and joins them with ", ".
func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = quote(n)
	}
	return strings.Join(q, ", ")
}

// replace returns "c = VALUES(c)" for each column: the replace assignment.
func replace(cols ...string) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = fmt.Sprintf("%s = VALUES(%s)", quote(c), quote(c))
	}
	return out
}

// coalesce returns "c = COALESCE(VALUES(c), c)" for each column: a missing value keeps the
// stored one.
func coalesce(cols ...string) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = fmt.Sprintf("%s = COALESCE(VALUES(%s), %s)", quote(c), quote(c), quote(c))
	}
	return out
}

// inList returns "?, ?, ..." for n values.
func inList(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}
