package consumer

import (
	"github.com/streamledger/streamledger/internal/keyindex"
	"github.com/streamledger/streamledger/sink"
)

// stateBuffer holds a partition's state rows until the next flush: per table, the latest row
// of each key. A row replaces the buffered row of its key unless it is older at
// [sink.Precision], a tie going to the later row, which is how a sink resolves the rows of
// one UpsertLatest call; so the flush writes the rows it would have written from every
// message, and the buffer holds one row per key however many messages of the tick update
// that key. Rows are buffered in offset order by the partition's decider, so the outcome
// does not depend on how the partitions' decisions interleave.
type stateBuffer struct {
	tables map[string]*stateTable
}

// stateTable is one table's buffered rows, their estimated bytes, and where each key's row is:
// keys of one string value by that string, others by keyindex.Dedup.
type stateTable struct {
	rows  []sink.StateRow
	sizes []int64
	index keyindex.Index
	// hintString and hintKey are the keys each index held at the last flush: a table started
	// anew sizes its storage for as many at its first row, so that a steady load does not
	// grow it by copying every tick.
	hintString, hintKey int
}

// indexedRowBytes is the estimated cost of a buffered key besides its row's own memory
// (rowBytes): its entry in the table's index map and its place in the rows and sizes slices,
// with the slack their growth leaves.
const indexedRowBytes = 96

// keepIndexBelow is the size up to which a table keeps its index and slices, emptied, from
// one flush to the next whatever the load. Past it a table keeps them while a flush takes at
// least half the rows its slices hold room for, so that a steady load reuses them tick after
// tick; a flush that takes fewer (the load fell after a burst) or none starts the table
// anew, so that storage left by a burst does not stay behind, unaccounted. The new table's
// storage is made at its first row, for as many rows as the last flush took.
const keepIndexBelow = 4096

// add buffers r and returns the change in the buffer's estimated bytes.
func (b *stateBuffer) add(r sink.StateRow) int64 {
	if b.tables == nil {
		b.tables = make(map[string]*stateTable, 2)
	}
	t := b.tables[r.Table]
	if t == nil {
		t = &stateTable{}
		b.tables[r.Table] = t
	}
	if t.rows == nil {
		t.init()
	}
	i, ok := t.index.Find(r.Key, len(t.rows))
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

// init makes the table's storage, sized by its hints.
func (t *stateTable) init() {
	n := t.hintString + t.hintKey
	t.rows, t.sizes = make([]sink.StateRow, 0, n), make([]int64, 0, n)
	t.index = keyindex.New(t.hintString, t.hintKey)
}

// appendTo appends the buffered rows to out, by table, and empties the buffer, keeping its
// storage for the next flush where the load fills it (see keepIndexBelow). It adds the rows'
// estimated bytes (rowBytes) to bytes, by table, from the sizes recorded as they were
// buffered.
func (b *stateBuffer) appendTo(out map[string][]sink.StateRow, bytes map[string]int64) {
	for name, t := range b.tables {
		if len(t.rows) > 0 {
			out[name] = append(out[name], t.rows...)
		}
		for _, n := range t.sizes {
			bytes[name] += n
		}
		if cap(t.rows) > keepIndexBelow && 2*len(t.rows) < cap(t.rows) {
			strings, others := t.index.Len()
			b.tables[name] = &stateTable{hintString: strings, hintKey: others}
			continue
		}
		clear(t.rows) // the buffer must not keep the rows' values alive
		t.rows, t.sizes = t.rows[:0], t.sizes[:0]
		t.index.Clear()
	}
}
