package postgres

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/sink"
)

// appendValue writes what pgx writes for the values and column types it takes, and takes
// nothing else; fitsValue tells which those are.
func TestAppendValueMatchesPgx(t *testing.T) {
	at := time.Date(2026, 3, 10, 7, 45, 0, 123456789, time.FixedZone("CET", 3600))
	m := pgtype.NewMap()
	for _, tc := range []struct {
		oid uint32
		v   any
		ok  bool
	}{
		{pgtype.TextOID, "GVB:17 — Zürich", true},
		{pgtype.VarcharOID, "", true},
		{pgtype.Float8OID, -0.5, true},
		{pgtype.Float8OID, math.Inf(-1), true},
		{pgtype.Int8OID, int64(math.MinInt64), true},
		{pgtype.Int8OID, 7, true},
		{pgtype.Int8OID, int32(-7), true},
		{pgtype.Int4OID, int32(math.MaxInt32), true},
		{pgtype.BoolOID, true, true},
		{pgtype.BoolOID, false, true},
		{pgtype.TimestamptzOID, at, true},
		{pgtype.TimestamptzOID, time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC), true},
		{pgtype.ByteaOID, []byte{0, 1, 255}, true},
		{pgtype.ByteaOID, []byte{}, true},
		{pgtype.Int4OID, nil, true},
		{pgtype.ByteaOID, []byte(nil), false},
		{pgtype.Int4OID, int64(5), false},
		{pgtype.Int4OID, 5, false},
		{pgtype.Float4OID, 0.5, false},
		{pgtype.NumericOID, 0.5, false},
		{pgtype.TimestampOID, at, false},
		{pgtype.JSONBOID, "{}", false},
		{pgtype.TextOID, []byte("x"), false},
		{pgtype.TextOID, new(string), false},
	} {
		got, ok := appendValue([]byte{9}, tc.oid, tc.v)
		require.Equal(t, tc.ok, ok, "%T for OID %d", tc.v, tc.oid)
		require.Equal(t, ok, fitsValue(tc.oid, tc.v), "fitsValue agrees: %T for OID %d", tc.v, tc.oid)
		if !ok {
			assert.Equal(t, []byte{9}, got, "nothing appended")
			continue
		}
		want := binary.BigEndian.AppendUint32([]byte{9}, math.MaxUint32)
		enc, err := m.Encode(tc.oid, pgtype.BinaryFormatCode, tc.v, []byte{}) // nil only for NULL
		require.NoError(t, err)
		if enc != nil {
			want = append(binary.BigEndian.AppendUint32([]byte{9}, uint32(len(enc))), enc...)
		}
		assert.Equal(t, want, got, "%T %v for OID %d", tc.v, tc.v, tc.oid)
	}
}

// The reader streams the header, every row of every chunk and the trailer, whatever the size
// of the reads, and waits for a chunk only when it has nothing to hand over.
func TestBinaryReader(t *testing.T) {
	start := time.Date(2026, 3, 2, 7, 0, 0, 0, time.UTC)
	chunks := []*mergedRows{chunkOf(start, "a", "b"), chunkOf(start), chunkOf(start, "c")}
	var want []byte
	want = append(want, binaryCopyHeader...)
	for _, c := range chunks {
		for i := range c.Len() {
			want = c.appendBinary(want, i)
		}
	}
	want = append(want, binaryCopyTrailer...)
	for _, size := range []int{1, 7, 64, 1 << 16} {
		k, waits := 0, 0
		r := &binaryReader{next: func(wait bool) (binaryRows, bool, error) {
			if wait {
				waits++
			}
			if k == len(chunks) {
				return nil, false, nil
			}
			if !wait && k == 1 {
				return nil, true, nil // the second chunk is not ready at once
			}
			k++
			return chunks[k-1], true, nil
		}}
		var got []byte
		p := make([]byte, size)
		for {
			n, err := r.Read(p)
			got = append(got, p[:n]...)
			if err != nil {
				break
			}
		}
		assert.Equal(t, want, got, "reads of %d bytes", size)
		assert.LessOrEqual(t, waits, 4, "reads of %d bytes", size)
	}
}

// BenchmarkCopyEncode encodes a chunk of merged rows and a batch of state rows for COPY, in
// the binary format written here and the way pgx's CopyFrom does (each value boxed and
// encoded through the type map), per row.
func BenchmarkCopyEncode(b *testing.B) {
	const n = 8192
	start := time.Date(2026, 3, 2, 7, 0, 0, 0, time.UTC)
	owner := "GVB"
	merged := newMergedRows(n, 1, start)
	states := &stateRows{rows: make([]sink.StateRow, n), oids: []uint32{pgtype.TextOID, pgtype.TimestamptzOID,
		pgtype.TextOID, pgtype.TextOID, pgtype.TextOID, pgtype.Float8OID, pgtype.Float8OID, pgtype.Float8OID}}
	for i := range n {
		id := fmt.Sprintf("GVB:%05d", i)
		merged.add(sink.Key{WindowStart: start, Dimension: "line", DimensionID: id}, start.Add(5*time.Minute),
			[]*string{&owner}, sink.Summary{Count: int64(i), Mean: 61.5, Quantile: 180, Max: 240, Min: -30})
		states.rows[i] = sink.StateRow{Table: "vehicle_latest", Key: []any{id}, ObservedAt: start,
			Values: []any{"GVB:17:" + id, "GVB:17", owner, 52.37, 4.89, 270.0}}
	}
	mergedOIDs := []uint32{pgtype.TimestamptzOID, pgtype.TimestamptzOID, pgtype.TextOID, pgtype.TextOID,
		pgtype.TextOID, pgtype.Int8OID, pgtype.Float8OID, pgtype.Float8OID, pgtype.Float8OID, pgtype.Float8OID,
		pgtype.TimestamptzOID}
	viaPgx := func(b *testing.B, oids []uint32, row func(i int) []any) {
		m := pgtype.NewMap()
		var buf []byte
		for b.Loop() {
			buf = buf[:0]
			for i := range n {
				for c, v := range row(i) {
					sp := len(buf)
					buf = binary.BigEndian.AppendUint32(buf, math.MaxUint32)
					enc, err := m.Encode(oids[c], pgtype.BinaryFormatCode, v, buf)
					if err != nil {
						b.Fatal(err)
					}
					if enc != nil {
						buf = enc
						binary.BigEndian.PutUint32(buf[sp:], uint32(len(buf)-sp-4))
					}
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/row")
	}
	binaryOf := func(b *testing.B, rows binaryRows) {
		var buf []byte
		for b.Loop() {
			buf = buf[:0]
			for i := range n {
				buf = rows.appendBinary(buf, i)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/row")
	}
	b.Run("merged/binary", func(b *testing.B) { binaryOf(b, merged) })
	b.Run("merged/pgx", func(b *testing.B) {
		viaPgx(b, mergedOIDs, func(i int) []any { return append(merged.Row(i), merged.Consts()...) })
	})
	b.Run("state/binary", func(b *testing.B) { binaryOf(b, states) })
	b.Run("state/pgx", func(b *testing.B) { viaPgx(b, states.oids, states.Row) })
}
