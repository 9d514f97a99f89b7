package fold

import (
	"fmt"
	"time"

	"github.com/streamledger/streamledger/sink"
)

// A first fold reads each source of its window through a cursor: the source's stored entries,
// decoded as the fold reaches them, with the call's entries of the source replacing them key
// by key. A chunker takes the entries from the cursors a range of keys at a time, so that a
// fold holds one range of a large window decoded while it makes that range's merged rows,
// not every stored entry of the window beside the rows.

// cursor yields the entries of one source of a window in key order.
type cursor struct {
	src     sink.TopicPartition
	start   time.Time    // the window's, for errors
	r       *entryReader // stored entries not read yet; nil: none left to read
	stored  []Entry      // stored entries decoded already (the reader left none encoded)
	batch   []Entry      // the call's entries of the source not taken yet
	total   int          // stored entries and the call's: at least the keys the cursor yields
	head    Entry        // the next stored entry, read ahead; set while hasHead
	hasHead bool
	slots   []*string // the attributes of head when read by r
	err     error
}

// newCursor returns the cursor of source s of window w.
func (c *Call) newCursor(w *pending, s sink.TopicPartition) (*cursor, error) {
	cur := &cursor{src: s, start: w.start, batch: w.batch[s]}
	p := w.stored[s]
	switch {
	case p == nil:
	case p.Entries != nil || p.Blob == nil:
		cur.stored = p.Entries
	default:
		r, err := c.codec.reader(p.Blob, c.spec.Attributes)
		if err != nil {
			return nil, storedError(s, w.start, err)
		}
		cur.r, cur.slots = r, make([]*string, len(c.spec.Attributes))
	}
	cur.total = len(cur.stored) + len(cur.batch)
	if cur.r != nil {
		cur.total += cur.r.left
	}
	return cur, nil
}

// storedError wraps an error of decoding the blob of src's compact row of the window at start.
func storedError(src sink.TopicPartition, start time.Time, err error) error {
	return fmt.Errorf("compact partials of %s at %s: %w", src, start.Format(time.RFC3339), err)
}

// fill reads the next stored entry into head, if there is one and head is empty.
func (cur *cursor) fill() {
	if cur.hasHead || cur.err != nil {
		return
	}
	switch {
	case len(cur.stored) > 0:
		cur.head, cur.stored, cur.hasHead = cur.stored[0], cur.stored[1:], true
	case cur.r != nil:
		if cur.r.next(&cur.head, cur.slots) {
			cur.hasHead = true
			return
		}
		if err := cur.r.d.err; err != nil {
			cur.err = storedError(cur.src, cur.start, err)
		}
		cur.r = nil
	}
}

// peek returns the next entry without taking it; false at the end, or when the stored
// entries turned out corrupt (cur.err).
func (cur *cursor) peek() (*Entry, bool) {
	cur.fill()
	switch {
	case cur.err != nil || !cur.hasHead && len(cur.batch) == 0:
		return nil, false
	case !cur.hasHead:
		return &cur.batch[0], true
	case len(cur.batch) == 0 || compareEntries(&cur.head, &cur.batch[0]) <= 0:
		return &cur.head, true
	}
	return &cur.batch[0], true
}

// take returns the next entry, which peek reported: the call's entry of a key replaces the
// stored one, keeping the stored attributes it lacks. Its attributes may be head's slots,
// which the next read overwrites.
func (cur *cursor) take() Entry {
	k := 1 // no stored entry: the batch's
	switch {
	case !cur.hasHead:
	case len(cur.batch) == 0:
		k = -1
	default:
		k = compareEntries(&cur.head, &cur.batch[0])
	}
	if k < 0 {
		cur.hasHead = false
		return cur.head
	}
	e := cur.batch[0]
	cur.batch = cur.batch[1:]
	if k == 0 {
		e.Attrs = coalesce(e.Attrs, cur.head.Attrs)
		cur.hasHead = false
	}
	return e
}

// chunker cuts a window's entries, read from its sources' cursors, into ranges of keys: each
// range holds size entries of the cursor with the most entries (all where size <= 0) and the
// other cursors' entries before the next range's first key of that cursor, so that all
// entries of a key fall in one range, as cut cuts decoded lists.
type chunker struct {
	curs  []*cursor
	ref   int // the cursor with the most entries
	size  int
	lists [][]Entry   // the range's entries per cursor, reused by the next range
	slots [][]*string // their attributes, copied from the cursors
	na    int
}

// newChunker returns the chunker of window w's sources in source order.
func (c *Call) newChunker(w *pending, size int) (*chunker, error) {
	k := &chunker{size: size, na: len(c.spec.Attributes)}
	for _, s := range w.sources() {
		cur, err := c.newCursor(w, s)
		if err != nil {
			return nil, err
		}
		if cur.total > k.largest() {
			k.ref = len(k.curs)
		}
		k.curs = append(k.curs, cur)
	}
	k.lists, k.slots = make([][]Entry, len(k.curs)), make([][]*string, len(k.curs))
	if size > 0 {
		// A range takes about size entries of each source whose keys resemble the largest's:
		// room for that and a little more spares growing every list in the first range.
		for i, cur := range k.curs {
			n := min(cur.total, size+size/8)
			k.lists[i], k.slots[i] = make([]Entry, 0, n), make([]*string, 0, n*k.na)
		}
	}
	return k, nil
}

// largest returns the most entries a cursor has.
func (k *chunker) largest() int {
	if len(k.curs) == 0 {
		return 0
	}
	return k.curs[k.ref].total
}

// sources returns the sources that contribute a key, in order.
func (k *chunker) sources() []sink.TopicPartition {
	var out []sink.TopicPartition
	for _, cur := range k.curs {
		if cur.total > 0 {
			out = append(out, cur.src)
		}
	}
	return out
}

// next reads the next range into k.lists; it returns false once no entry is left.
func (k *chunker) next() (bool, error) {
	for i := range k.lists {
		clear(k.lists[i])
		clear(k.slots[i])
		k.lists[i], k.slots[i] = k.lists[i][:0], k.slots[i][:0]
	}
	if len(k.curs) == 0 {
		return false, nil
	}
	ref := k.curs[k.ref]
	for n := 0; k.size <= 0 || n < k.size; n++ {
		if _, ok := ref.peek(); !ok {
			break
		}
		k.add(k.ref)
	}
	if ref.err != nil {
		return false, ref.err
	}
	pivot, more := ref.peek() // the next range's first key; ref is not read until then
	read := 0
	for i, cur := range k.curs {
		if i != k.ref {
			k.addBefore(i, pivot, more)
		}
		if cur.err != nil {
			return false, cur.err
		}
		read += len(k.lists[i])
	}
	return read > 0, nil
}

// addBefore takes cursor i's entries before pivot (all of them without more) into its list.
func (k *chunker) addBefore(i int, pivot *Entry, more bool) {
	for {
		e, ok := k.curs[i].peek()
		if !ok || more && compareEntries(e, pivot) >= 0 {
			return
		}
		k.add(i)
	}
}

// add takes cursor i's next entry into its list, with its attributes copied.
func (k *chunker) add(i int) {
	e := k.curs[i].take()
	if len(e.Attrs) > 0 {
		at := len(k.slots[i])
		k.slots[i] = append(k.slots[i], e.Attrs...)
		e.Attrs = k.slots[i][at:len(k.slots[i]):len(k.slots[i])]
	}
	k.lists[i] = append(k.lists[i], e)
}
