package window

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type indexKey struct {
	Dimension, ID string
	N             int
}

// Every key added is found at its position in first-Add order, through every growth of the
// table and after a reset, and a key never added is not found.
func TestKeyIndex(t *testing.T) {
	for _, tc := range []struct {
		name       string
		room, keys int
	}{
		{"empty", 0, 0},
		{"within the first table", 0, 5},
		{"grows many times", 0, 10_000},
		{"sized ahead", 10_000, 10_000},
		{"sized too large", 100_000, 10},
	} {
		x := newKeyIndex[indexKey](tc.room)
		for round := range 2 {
			for i := range tc.keys {
				k := indexKey{"line", fmt.Sprint(i % 97), i}
				_, slot, ok := x.find(k)
				require.False(t, ok, "%s: key %d before it is added", tc.name, i)
				require.Equal(t, int32(i), x.add(k, slot), tc.name)
			}
			require.Len(t, x.keys, tc.keys, tc.name)
			for i := range tc.keys {
				pos, _, ok := x.find(indexKey{"line", fmt.Sprint(i % 97), i})
				require.True(t, ok, "%s: key %d", tc.name, i)
				require.Equal(t, int32(i), pos, "%s: key %d", tc.name, i)
				require.Equal(t, indexKey{"line", fmt.Sprint(i % 97), i}, x.keys[pos])
			}
			_, _, ok := x.find(indexKey{"line", "0", -1})
			assert.False(t, ok, tc.name)
			assert.LessOrEqual(t, 4*len(x.keys), 3*len(x.slots), "%s: at most three quarters full", tc.name)
			x.reset(tc.keys)
			assert.Empty(t, x.keys, "%s: round %d: reset empties it", tc.name, round)
			_, _, ok = x.find(indexKey{"line", "0", 0})
			assert.False(t, ok, "%s: a key added before the reset", tc.name)
		}
	}
}

func TestSlotsFor(t *testing.T) {
	for _, tc := range []struct{ n, want int }{{0, 8}, {6, 8}, {7, 16}, {12, 16}, {13, 32}, {3000, 4096}, {3073, 8192}} {
		assert.Equal(t, tc.want, slotsFor(tc.n), "n=%d", tc.n)
	}
}

// release drops the references the keys hold, and the index works again after a reset.
func TestKeyIndexRelease(t *testing.T) {
	x := newKeyIndex[string](4)
	for _, k := range []string{"a", "b", "c"} {
		_, slot, ok := x.find(k)
		require.False(t, ok)
		x.add(k, slot)
	}
	x.release()
	assert.Empty(t, x.keys)
	assert.Equal(t, []string{"", "", ""}, x.keys[:3], "the storage holds no key")
	x.reset(4)
	_, slot, ok := x.find("b")
	require.False(t, ok, "nothing is found after a reset")
	assert.Equal(t, int32(0), x.add("b", slot))
	pos, _, ok := x.find("b")
	assert.True(t, ok)
	assert.Equal(t, int32(0), pos)
}
