package keyindex_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/streamledger/streamledger/internal/keyindex"
)

func TestFind(t *testing.T) {
	t0 := time.Date(2026, 3, 10, 7, 45, 0, 0, time.UTC)
	x := keyindex.New(0, 0)
	for _, tc := range []struct {
		name  string
		key   []any
		want  int
		found bool
	}{
		{"a string", []any{"bus-1"}, 0, false},
		{"the string again", []any{"bus-1"}, 0, true},
		{"a number of the same text is another key", []any{int64(1)}, 2, false},
		{"a string of that number's text", []any{"1"}, 3, false},
		{"the number again", []any{int64(1)}, 2, true},
		{"a composite key", []any{"bus-1", int64(1)}, 5, false},
		{"the composite key again", []any{"bus-1", int64(1)}, 5, true},
		{"a time", []any{t0}, 7, false},
		{"the same instant below the precision", []any{t0.Add(time.Nanosecond)}, 7, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := tc.want
			if tc.found {
				next = 99 // not recorded: the key has its position
			}
			got, found := x.Find(tc.key, next)
			assert.Equal(t, tc.found, found)
			if found {
				assert.Equal(t, tc.want, got, "the position recorded first")
			}
		})
	}
	strings, others := x.Len()
	assert.Equal(t, 2, strings, "bus-1 and 1")
	assert.Equal(t, 3, others, "the number, the composite key and the time")
	x.Clear()
	_, found := x.Find([]any{"bus-1"}, 0)
	assert.False(t, found, "forgotten")
}

func TestDedup(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 7, 0, 0, 0, time.UTC)
	k := func(vals ...any) any { v, _ := keyindex.Dedup(nil, vals); return v }
	cet := time.FixedZone("CET", 3600)
	assert.Equal(t, k("a"), k("a"))
	assert.NotEqual(t, k("a"), k("b"))
	assert.NotEqual(t, k(int64(1)), k(int32(1)), "types are part of the key")
	assert.Equal(t, k(t0), k(t0.In(cet)), "times compare as instants")
	assert.Equal(t, k("a", 1), k("a", 1))
	assert.NotEqual(t, k("ab", "c"), k("a", "bc"), "tuples do not run together")
	assert.NotEqual(t, k([]byte("s1:x")), k("s1:x"), "an encoded tuple never equals a single string")
	assert.Equal(t, k([]byte{1, 2}), k([]byte{1, 2}), "byte slices are usable keys")
	assert.Equal(t, k("a", t0), k("a", t0.In(cet)))
}
