package consumer

import "github.com/streamledger/streamledger/sink"

// stateBuffer holds a partition's state rows until the next flush: per table, the latest row
// of each key. A row replaces the buffered row of its key unless it is older at
// [sink.Precision], a tie going to the later row, which is how [sink.PrepareLatest] resolves
// a flush's rows; so the flush writes the rows it would have written from every message, and
// the buffer holds one row per key however many messages of the tick update that key. Rows
// are buffered in offset order by the partition's decider, so the outcome does not depend on
// how the partitions' decisions interleave.
type stateBuffer struct {
	tables map[string]*stateTable
}

// stateTable is one table's buffered rows, their estimated bytes, and where each key's row is:
// keys of one string value by that string, others by [sink.DedupKey].
type stateTable struct {
	rows     []sink.StateRow
	sizes    []int64
	byString map[string]int
	byKey    map[any]int
	buf      []byte // scratch for composite keys
}

// indexedRowBytes is the estimated cost of a buffered key besides its row's own memory
// (rowBytes): its entry in the table's index map and its place in the rows and sizes slices,
// with the slack their growth leaves.
const indexedRowBytes = 96

// keepIndexBelow is the size up to which a table keeps its index and slices, emptied, from
// one flush to the next; a table that held more starts the next flush anew, so that a burst
// of keys does not leave its storage behind, unaccounted, once the load falls.
const keepIndexBelow = 4096

// add buffers r and returns the change in the buffer's estimated bytes.
func (b *stateBuffer) add(r sink.StateRow) int64 {
	if b.tables == nil {
		b.tables = make(map[string]*stateTable, 2)
	}
	t := b.tables[r.Table]
	if t == nil {
		t = newStateTable()
		b.tables[r.Table] = t
	}
	i, ok := t.find(r.Key)
	size := rowBytes(r)
	if !ok {
		t.rows = append(t.rows, r)
		t.sizes = append(t.sizes, size)
		return size + indexedRowBytes
	}
	if sink.AtPrecision(r.ObservedAt).Before(sink.AtPrecision(t.rows[i].ObservedAt)) {
		return 0 // an older row of the key: the buffered one is what the flush writes
	}
	delta := size - t.sizes[i]
	t.rows[i], t.sizes[i] = r, size
	return delta
}

func newStateTable() *stateTable {
	return &stateTable{byString: make(map[string]int), byKey: make(map[any]int)}
}

// find returns the index of key's row, or registers the next index for it.
func (t *stateTable) find(key []any) (int, bool) {
	next := len(t.rows)
	if len(key) == 1 {
		if s, ok := key[0].(string); ok {
			i, ok := t.byString[s]
			if !ok {
				t.byString[s] = next
			}
			return i, ok
		}
	}
	var k any
	k, t.buf = sink.DedupKey(t.buf[:0], key)
	i, ok := t.byKey[k]
	if !ok {
		t.byKey[k] = next
	}
	return i, ok
}

// appendTo appends the buffered rows to out, by table, and empties the buffer, keeping its
// storage for the next flush.
func (b *stateBuffer) appendTo(out map[string][]sink.StateRow) {
	for name, t := range b.tables {
		if len(t.rows) == 0 {
			continue
		}
		out[name] = append(out[name], t.rows...)
		if len(t.rows) > keepIndexBelow {
			b.tables[name] = newStateTable()
			continue
		}
		clear(t.rows) // the buffer must not keep the rows' values alive
		t.rows, t.sizes = t.rows[:0], t.sizes[:0]
		clear(t.byString)
		clear(t.byKey)
	}
}
