package postgres

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// Both COPYs (the merged rows', the state rows' into their temporary table) write
// PostgreSQL's binary COPY format themselves, straight from the rows' values, when the table's
// column types and the values' Go types are ones encoded here; anything else goes through
// pgx's CopyFrom, which encodes any type it knows. Both send the same values: timestamps at
// microseconds, as Postgres stores them.

// binaryCopyHeader is the binary COPY signature, flags and header extension length.
var binaryCopyHeader = []byte("PGCOPY\n\377\r\n\000\000\000\000\000\000\000\000\000")

// binaryCopyTrailer ends the rows: a field count of -1.
var binaryCopyTrailer = []byte{0xff, 0xff}

// y2kMicros is 2000-01-01 00:00 UTC in microseconds since the Unix epoch: Postgres counts
// binary timestamps from it.
const y2kMicros = 946_684_800 * 1_000_000

func appendTimestamptz(b []byte, t time.Time) []byte {
	b = binary.BigEndian.AppendUint32(b, 8)
	return binary.BigEndian.AppendUint64(b, uint64(t.Unix()*1_000_000+int64(t.Nanosecond()/1000)-y2kMicros))
}

func appendText(b []byte, s string) []byte {
	return append(binary.BigEndian.AppendUint32(b, uint32(len(s))), s...)
}

func appendTextOrNull(b []byte, s *string) []byte {
	if s == nil {
		return binary.BigEndian.AppendUint32(b, math.MaxUint32) // -1: NULL
	}
	return appendText(b, *s)
}

func appendInt8(b []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(b, 8), uint64(v))
}

func appendFloat8(b []byte, v float64) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(b, 8), math.Float64bits(v))
}

// appendValue appends v, in binary COPY format, for a column of type oid. It reports false,
// appending nothing, for a value it does not encode for that type: pgx's encoding, which knows
// more conversions, then takes the batch.
func appendValue(b []byte, oid uint32, v any) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return binary.BigEndian.AppendUint32(b, math.MaxUint32), true
	case string:
		if oid == pgtype.TextOID || oid == pgtype.VarcharOID {
			return appendText(b, x), true
		}
	case float64:
		if oid == pgtype.Float8OID {
			return appendFloat8(b, x), true
		}
	case int64:
		if oid == pgtype.Int8OID {
			return appendInt8(b, x), true
		}
	case int:
		if oid == pgtype.Int8OID {
			return appendInt8(b, int64(x)), true
		}
	case int32:
		switch oid {
		case pgtype.Int4OID:
			return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(b, 4), uint32(x)), true
		case pgtype.Int8OID:
			return appendInt8(b, int64(x)), true
		}
	case bool:
		if oid == pgtype.BoolOID {
			return append(binary.BigEndian.AppendUint32(b, 1), boolByte(x)), true
		}
	case time.Time:
		if oid == pgtype.TimestamptzOID {
			return appendTimestamptz(b, x), true
		}
	case []byte:
		if oid == pgtype.ByteaOID && x != nil {
			return append(binary.BigEndian.AppendUint32(b, uint32(len(x))), x...), true
		}
	}
	return b, false
}

// fitsValue reports whether appendValue encodes v for a column of type oid. It reads only v's
// dynamic type (and a byte slice's length), not the memory v points to.
func fitsValue(oid uint32, v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return oid == pgtype.TextOID || oid == pgtype.VarcharOID
	case float64:
		return oid == pgtype.Float8OID
	case int64, int:
		return oid == pgtype.Int8OID
	case int32:
		return oid == pgtype.Int4OID || oid == pgtype.Int8OID
	case bool:
		return oid == pgtype.BoolOID
	case time.Time:
		return oid == pgtype.TimestamptzOID
	case []byte:
		return oid == pgtype.ByteaOID && x != nil
	}
	return false
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// binaryRows is a batch of rows that can append each in binary COPY format.
type binaryRows interface {
	Len() int
	appendBinary(b []byte, i int) []byte
}

// appendBinary appends row i in binary COPY format, computed_at last.
func (m *mergedRows) appendBinary(b []byte, i int) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(4+len(m.attrVals)+6))
	b = appendTimestamptz(b, m.starts[i])
	b = appendTimestamptz(b, m.ends[i])
	b = appendText(b, m.dims[i])
	b = appendText(b, m.ids[i])
	for _, a := range m.attrVals {
		b = appendTextOrNull(b, a[i])
	}
	b = appendInt8(b, m.counts[i])
	b = appendFloat8(b, m.means[i])
	b = appendFloat8(b, m.qs[i])
	b = appendFloat8(b, m.maxs[i])
	b = appendFloat8(b, m.mins[i])
	return appendTimestamptz(b, m.now)
}

// mergedOIDs returns the types the binary encoding of merged rows writes, column by column
// in the order of upsert.columns, each with the alternatives it also fits.
func mergedOIDs(attrs int) [][]uint32 {
	ts, text := []uint32{pgtype.TimestamptzOID}, []uint32{pgtype.TextOID, pgtype.VarcharOID}
	out := [][]uint32{ts, ts, text, text}
	for range attrs {
		out = append(out, text)
	}
	f8 := []uint32{pgtype.Float8OID}
	return append(out, []uint32{pgtype.Int8OID}, f8, f8, f8, f8, ts)
}

// binaryMerged reports whether the merged table's columns have the types the binary encoding
// of merged rows writes.
func (s *Sink) binaryMerged(ctx context.Context, tx pgx.Tx) (bool, error) {
	oids, err := s.merged.columnTypes(ctx, tx)
	if err != nil {
		return false, err
	}
	want := mergedOIDs(len(s.cfg.Aggregates.Attributes))
	if len(oids) != len(want) {
		return false, nil
	}
	for i, oid := range oids {
		if !slices.Contains(want[i], oid) {
			return false, nil
		}
	}
	return true, nil
}

// columnTypes returns the type OIDs of u's columns (varying, then constant), read from the
// server the first time. A table altered to other column types later needs a new Sink.
func (u *upsert) columnTypes(ctx context.Context, tx pgx.Tx) ([]uint32, error) {
	u.oidsMu.Lock()
	defer u.oidsMu.Unlock()
	if u.oids != nil {
		return u.oids, nil
	}
	sd, err := tx.Prepare(ctx, "", fmt.Sprintf("SELECT %s FROM %s", u.cols, u.table))
	if err != nil {
		return nil, fmt.Errorf("read the column types of %s: %w", u.table, err)
	}
	oids := make([]uint32, len(sd.Fields))
	for i, f := range sd.Fields {
		oids[i] = f.DataTypeOID
	}
	u.oids = oids
	return oids, nil
}

// appendBinary appends row i in binary COPY format, for columns of types r.oids; it must
// follow a fitBinary that returned true.
func (r *stateRows) appendBinary(b []byte, i int) []byte {
	x := r.rows[i]
	nk := len(x.Key)
	b = binary.BigEndian.AppendUint16(b, uint16(len(r.oids)))
	for c, v := range x.Key {
		b, _ = appendValue(b, r.oids[c], v)
	}
	b = appendTimestamptz(b, x.ObservedAt)
	for c, v := range x.Values {
		b, _ = appendValue(b, r.oids[nk+1+c], v)
	}
	return b
}

// fitBinary reports whether appendValue encodes every value of the rows for columns of types
// oids (key, observed-at, values), and if so keeps oids for appendBinary.
func (r *stateRows) fitBinary(oids []uint32) bool {
	if len(r.rows) == 0 {
		return false
	}
	nk := len(r.rows[0].Key)
	if len(oids) != nk+1+len(r.rows[0].Values) || oids[nk] != pgtype.TimestamptzOID {
		return false
	}
	for _, x := range r.rows {
		for c, v := range x.Key {
			if !fitsValue(oids[c], v) {
				return false
			}
		}
		for c, v := range x.Values {
			if !fitsValue(oids[nk+1+c], v) {
				return false
			}
		}
	}
	r.oids = oids
	return true
}

// copyBinaryFrom runs a binary COPY of r's stream into table's cols in tx, reporting it to the
// connection's tracer (pgx.CopyFromTracer) as pgx's CopyFrom does.
func copyBinaryFrom(ctx context.Context, tx pgx.Tx, table pgx.Identifier, cols []string, r io.Reader) error {
	conn := tx.Conn()
	tracer, _ := conn.Config().Tracer.(pgx.CopyFromTracer)
	if tracer != nil {
		ctx = tracer.TraceCopyFromStart(ctx, conn, pgx.TraceCopyFromStartData{TableName: table, ColumnNames: cols})
	}
	sql := fmt.Sprintf("COPY %s (%s) FROM STDIN BINARY", table.Sanitize(), quoteAll("", cols))
	tag, err := conn.PgConn().CopyFrom(ctx, r, sql)
	if tracer != nil {
		tracer.TraceCopyFromEnd(ctx, conn, pgx.TraceCopyFromEndData{CommandTag: tag, Err: err})
	}
	return err
}

// binaryReader is a binary COPY stream of the rows next hands out, for pgconn's CopyFrom. It
// encodes rows as they are read, and waits for more rows only when it has nothing encoded to
// return.
type binaryReader struct {
	// next returns the next rows; ok is false when they have ended. Unless wait, it returns
	// (nil, true) at once when none are ready.
	next  func(wait bool) (rows binaryRows, ok bool, err error)
	cur   binaryRows
	i     int
	buf   []byte // encoded and not yet read: buf[off:]
	off   int
	begun bool
	ended bool // the trailer is in buf
}

func (r *binaryReader) Read(p []byte) (int, error) {
	for r.off == len(r.buf) {
		if r.ended {
			return 0, io.EOF
		}
		if err := r.fill(len(p)); err != nil {
			return 0, err
		}
	}
	n := copy(p, r.buf[r.off:])
	r.off += n
	return n, nil
}

// fill encodes rows into the emptied buffer until it holds about want bytes, the rows run out
// for now (something encoded, nothing more ready), or the rows end.
func (r *binaryReader) fill(want int) error {
	r.buf, r.off = r.buf[:0], 0
	if !r.begun {
		r.buf, r.begun = append(r.buf, binaryCopyHeader...), true
	}
	for len(r.buf) < want {
		if r.cur != nil && r.i < r.cur.Len() {
			r.buf = r.cur.appendBinary(r.buf, r.i)
			r.i++
			continue
		}
		next, ok, err := r.next(len(r.buf) == 0)
		switch {
		case err != nil:
			return err
		case !ok:
			r.buf, r.ended = append(r.buf, binaryCopyTrailer...), true
			return nil
		case next == nil:
			return nil // nothing ready: hand over what is encoded
		}
		r.cur, r.i = next, 0
	}
	return nil
}

// chunkSource returns a binaryReader's next over chunks, ending early with ctx's error, which
// it also records in *cause.
func chunkSource(ctx context.Context, chunks <-chan *mergedRows, cause *error) func(bool) (binaryRows, bool, error) {
	return func(wait bool) (binaryRows, bool, error) {
		if !wait {
			select {
			case rows, ok := <-chunks:
				return rows, ok, nil
			default:
				return nil, true, nil
			}
		}
		select {
		case rows, ok := <-chunks:
			return rows, ok, nil
		case <-ctx.Done():
			*cause = ctx.Err()
			return nil, false, *cause
		}
	}
}

// onceSource returns a binaryReader's next that hands out rows and then ends.
func onceSource(rows binaryRows) func(bool) (binaryRows, bool, error) {
	done := false
	return func(bool) (binaryRows, bool, error) {
		if done {
			return nil, false, nil
		}
		done = true
		return rows, true, nil
	}
}
