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

// stateTable is one table's buffered rows, and where each key's row is.
type stateTable struct {
	rows  []sink.StateRow
	index map[any]int
	buf   []byte // scratch for composite keys
}

// add buffers r and returns the change in the buffer's estimated bytes.
func (b *stateBuffer) add(r sink.StateRow) int64 {
	if b.tables == nil {
		b.tables = make(map[string]*stateTable, 2)
	}
	t := b.tables[r.Table]
	if t == nil {
		t = &stateTable{index: make(map[any]int)}
		b.tables[r.Table] = t
	}
	var k any
	k, t.buf = sink.DedupKey(t.buf[:0], r.Key)
	i, ok := t.index[k]
	if !ok {
		t.index[k] = len(t.rows)
		t.rows = append(t.rows, r)
		return rowBytes(r)
	}
	old := t.rows[i]
	if sink.AtPrecision(r.ObservedAt).Before(sink.AtPrecision(old.ObservedAt)) {
		return 0 // an older row of the key: the buffered one is what the flush writes
	}
	t.rows[i] = r
	return rowBytes(r) - rowBytes(old)
}

// appendTo appends the buffered rows to out, by table, and empties the buffer, keeping its
// storage for the next flush.
func (b *stateBuffer) appendTo(out map[string][]sink.StateRow) {
	for name, t := range b.tables {
		if len(t.rows) == 0 {
			continue
		}
		out[name] = append(out[name], t.rows...)
		clear(t.rows) // the buffer must not keep the rows' values alive
		t.rows = t.rows[:0]
		clear(t.index)
	}
}

// len returns how many rows of table are buffered.
func (b *stateBuffer) len(table string) int {
	if t := b.tables[table]; t != nil {
		return len(t.rows)
	}
	return 0
}
