// Package lockorder orders the rows of a last-write-wins batch the same way in every writer,
// process and release, so that concurrent upserts of the same keys lock their rows in one
// order and do not deadlock each other.
package lockorder

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/streamledger/streamledger/sink"
)

// Rows puts rows in the order every writer sends them, in place, and returns them: by a
// seedless hash of the key ([Hash]), then by the key itself where two hashes are equal. Any
// total order of the keys avoids deadlocks between writers; this one sorts 16-byte (hash,
// index) pairs by an integer instead of the rows by their boxed key values, which costs
// pointer chasing through []any, and then moves each row once to its place.
func Rows(rows []sink.StateRow) []sink.StateRow {
	type keyed struct {
		h uint64
		i int
	}
	ord := make([]keyed, len(rows))
	for i, r := range rows {
		ord[i] = keyed{Hash(r.Key), i}
	}
	slices.SortFunc(ord, func(a, b keyed) int {
		if a.h != b.h {
			return cmp.Compare(a.h, b.h)
		}
		return Compare(rows[a.i].Key, rows[b.i].Key)
	})
	// Place row ord[j].i at j, one cycle of the permutation at a time; a placed position's
	// index becomes -1.
	for j := range ord {
		if ord[j].i < 0 {
			continue
		}
		first, k := rows[j], j
		for {
			src := ord[k].i
			ord[k].i = -1
			if src == j {
				rows[k] = first
				break
			}
			rows[k], k = rows[src], src
		}
	}
	return rows
}

// Hash hashes a key tuple: each value's type tag and bytes (times as Unix nanoseconds),
// anything else by its type name and printed form, as Compare orders it.
func Hash(key []any) uint64 {
	h := NewFNV()
	for _, v := range key {
		switch x := v.(type) {
		case string:
			h = h.Byte('s').String(x).Byte(0)
		case int64:
			h = h.Byte('i').Uint64(uint64(x))
		case int:
			h = h.Byte('i').Uint64(uint64(x))
		case int32:
			h = h.Byte('i').Uint64(uint64(x))
		case time.Time:
			h = h.Byte('t').Uint64(uint64(x.UnixNano()))
		default:
			h = h.Byte('?').String(fmt.Sprintf("%T", v)).Byte(0).String(fmt.Sprint(v)).Byte(0)
		}
	}
	return uint64(h)
}

// Compare orders key tuples: values of the same basic type by value, anything else by
// type name and then by its printed form. Only consistency matters: every writer sends
// rows in the same order.
func Compare(a, b []any) int {
	for i := range min(len(a), len(b)) {
		if c := compareValues(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

func compareValues(a, b any) int {
	switch x := a.(type) {
	case string:
		if y, ok := b.(string); ok {
			return cmp.Compare(x, y)
		}
	case int64:
		if y, ok := b.(int64); ok {
			return cmp.Compare(x, y)
		}
	case int:
		if y, ok := b.(int); ok {
			return cmp.Compare(x, y)
		}
	case int32:
		if y, ok := b.(int32); ok {
			return cmp.Compare(x, y)
		}
	case time.Time:
		if y, ok := b.(time.Time); ok {
			return x.Compare(y)
		}
	}
	ta, tb := fmt.Sprintf("%T", a), fmt.Sprintf("%T", b)
	if c := cmp.Compare(ta, tb); c != 0 {
		return c
	}
	return cmp.Compare(fmt.Sprint(a), fmt.Sprint(b))
}

// FNV is a running FNV-1a (64 bits) hash. Lock buckets and the order of state rows use it
// because its value is fixed by the algorithm (hash/maphash's changes per process): every
// writer, in every process and every release, must map a key to the same value.
type FNV uint64

const fnvPrime = 1099511628211

// NewFNV returns the hash of nothing.
func NewFNV() FNV { return 14695981039346656037 }

// Byte hashes b.
func (h FNV) Byte(b byte) FNV { return (h ^ FNV(b)) * fnvPrime }

// String hashes the bytes of s.
func (h FNV) String(s string) FNV {
	for i := 0; i < len(s); i++ {
		h = h.Byte(s[i])
	}
	return h
}

// Uint64 hashes v's eight bytes, big endian.
func (h FNV) Uint64(v uint64) FNV {
	for shift := 56; shift >= 0; shift -= 8 {
		h = h.Byte(byte(v >> shift))
	}
	return h
}
