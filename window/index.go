package window

import (
	"hash/maphash"
	"unsafe"
)

// keyIndex holds the keys of one open window in first-Add order and finds a key's position
// among them. It is an open-addressing table of positions (linear probing on a maphash of
// the key) beside the slice of keys, so that each key is stored once, in the slice, and
// the table adds 4 bytes per slot: a map from keys to positions stores every key in its
// slots, and at its load factors takes about twice the key's size per key.
//
// A key's position, and so the order of partials, is its place in first-Add order, whatever
// the hash seed: the hash only chooses the slots the table probes. Keys of a type that holds
// pointers other than strings escape to the heap when hashed (maphash.Comparable), so such key
// types allocate on every lookup.
type keyIndex[K comparable] struct {
	seed  maphash.Seed
	keys  []K     // in first-Add order
	slots []int32 // position+1 of the key hashed there; 0: empty. len is a power of two
}

// minSlots is the size of the smallest table.
const minSlots = 8

// newKeyIndex returns an index with room for about n keys.
func newKeyIndex[K comparable](n int) keyIndex[K] {
	x := keyIndex[K]{seed: maphash.MakeSeed()}
	x.reset(n)
	return x
}

// reset empties x, keeping room for about n keys, and drops its references to the keys.
func (x *keyIndex[K]) reset(n int) {
	size := slotsFor(n)
	if cap(x.slots) >= size && cap(x.slots) <= 4*size {
		x.slots = x.slots[:size]
		clear(x.slots)
	} else {
		x.slots = make([]int32, size)
	}
	clear(x.keys)
	if cap(x.keys) < n || cap(x.keys) > 4*n+minSlots {
		x.keys = make([]K, 0, n)
	}
	x.keys = x.keys[:0]
}

// release drops x's references to its keys (the text of string keys, say), keeping their
// storage. The table still points at the dropped positions, so x must be reset before its
// next find or add.
func (x *keyIndex[K]) release() {
	clear(x.keys)
	x.keys = x.keys[:0]
}

// capBytes returns the bytes of x's storage: its key array and its table.
func (x *keyIndex[K]) capBytes() int64 {
	var k K
	return int64(cap(x.keys))*int64(unsafe.Sizeof(k)) + int64(cap(x.slots))*4
}

// slotsFor returns the table size for n keys: a power of two at least 4/3 n, so that the
// table is at most three quarters full.
func slotsFor(n int) int {
	size := minSlots
	for size*3 < n*4 {
		size *= 2
	}
	return size
}

// find returns the position of k, and whether k is there; if not, the slot it would take.
func (x *keyIndex[K]) find(k K) (pos int32, slot int, ok bool) {
	mask := len(x.slots) - 1
	i := int(maphash.Comparable(x.seed, k)) & mask
	for {
		p := x.slots[i]
		if p == 0 {
			return 0, i, false
		}
		if x.keys[p-1] == k {
			return p - 1, i, true
		}
		i = (i + 1) & mask
	}
}

// add appends k, which find reported missing at slot, and returns its position.
func (x *keyIndex[K]) add(k K, slot int) int32 {
	x.keys = append(x.keys, k)
	pos := int32(len(x.keys) - 1)
	if len(x.keys)*4 > len(x.slots)*3 {
		x.grow()
		return pos
	}
	x.slots[slot] = pos + 1
	return pos
}

// grow doubles the table and places every key again.
func (x *keyIndex[K]) grow() {
	x.slots = make([]int32, 2*len(x.slots))
	mask := len(x.slots) - 1
	for p, k := range x.keys {
		i := int(maphash.Comparable(x.seed, k)) & mask
		for x.slots[i] != 0 {
			i = (i + 1) & mask
		}
		x.slots[i] = int32(p + 1)
	}
}

// bytesPerKey estimates what a key costs the index: its place in the slice and two table
// slots, about the average of a table between three eighths and three quarters full.
func bytesPerKey(keySize int64) int64 { return keySize + 4*2 }
