package keyindex

// Index maps keys to positions. The zero value is not usable; make one with New.
type Index struct {
	byString map[string]int
	byKey    map[any]int
	buf      []byte // scratch for composite keys
}

// New returns an empty index with room for about strings keys of one string and others
// other keys.
func New(strings, others int) Index {
	return Index{byString: make(map[string]int, strings), byKey: make(map[any]int, others)}
}

// Find returns the position of key, or records next as its position and returns false.
func (x *Index) Find(key []any, next int) (int, bool) {
	if len(key) == 1 {
		if s, ok := key[0].(string); ok {
			i, ok := x.byString[s]
			if !ok {
				x.byString[s] = next
			}
			return i, ok
		}
	}
	var k any
	k, x.buf = Dedup(x.buf[:0], key)
	i, ok := x.byKey[k]
	if !ok {
		x.byKey[k] = next
	}
	return i, ok
}

// Len returns the keys of one string and the other keys the index holds.
func (x *Index) Len() (strings, others int) { return len(x.byString), len(x.byKey) }

// Clear forgets every key, keeping the index's storage.
func (x *Index) Clear() {
	clear(x.byString)
	clear(x.byKey)
}
