package window

import (
	"fmt"
	"math"
	"time"
	"unsafe"
)

// Config configures a [Windows]. The zero value is valid. In every field, zero means the
// default the field states; a negative value is accepted only where the field says what it
// means, and [New] refuses it anywhere else with an error wrapping [ErrConfig] that names the
// field.
type Config[K comparable] struct {
	// Size is the length of every window. Zero means 5 min ([DefaultSize], the default); a
	// negative value is refused.
	Size time.Duration
	// ExactLimit is how many values each key's [Stats] keeps exactly, with exact
	// quantiles; the next value folds them into a t-digest. Every writer of the same
	// aggregates must use the same limit, and the sink that merges them too (see [Merge]): a
	// key whose partials are exact merges exactly. Zero means 256 ([DefaultExactLimit], the
	// default); negative means none, a digest from the first value; above [MaxExactLimit] is
	// refused.
	ExactLimit int
	// Retain, if set, is called with a key the first time it enters an open window, and the
	// window stores what it returns, which must equal the key. A key that points into a
	// short-lived buffer (a string cut from a message's text) should be copied or interned
	// here: the window keeps its keys until it closes, and with them whatever they point
	// into. Keys already in the window are not passed again, so this costs nothing per Add.
	// Nil stores keys as given.
	Retain func(K) K
}

func (c Config[K]) withDefaults() (Config[K], error) {
	if c.Size < 0 {
		return c, fmt.Errorf("%w: Config.Size is %v, want a positive duration or zero for the default %v", ErrConfig, c.Size, DefaultSize)
	}
	if c.Size == 0 {
		c.Size = DefaultSize
	}
	return c, nil
}

// Partial is the aggregate of one key in one closed window of one source partition.
type Partial[K comparable] struct {
	Start, End time.Time // the window [Start, End), UTC
	Key        K
	Stats      *Stats
}

// Windows holds the open windows of ONE source partition: per window, one [Stats] per key.
//
// Keep one Windows per source partition, fed with that partition's events in offset
// order. Revoking or losing the partition drops its state: discard the Windows (or call
// [Windows.Reset] to reuse it). The next owner replays the partition from its committed
// offset into a fresh Windows, after restoring how far it was closed with
// [Windows.Close] (which on an empty Windows only records the watermark), and so
// rebuilds the same partials.
//
// A Windows is not safe for concurrent use; partitions are independent, so each can
// be driven by its own goroutine.
type Windows[K comparable] struct {
	size   int64 // window size in nanoseconds
	closed int64 // watermark closed through, ns; math.MinInt64 before the first Close
	open   []*openWindow[K]
	last   *openWindow[K] // the window of the previous Add, the usual next target
	buf    scratch
	retain func(K) K
	limit  int32 // exact limit of new Stats, in the form of exactLimitSetting
	// spare holds the key index of a closed window, cleared, for reuse: a window's key set
	// resembles the previous one's, so reusing it avoids regrowing an index of thousands of
	// keys every window. It is kept only while a window is open, and counts in Bytes until
	// it is reused.
	spare *openWindow[K]
	hint  int   // keys in the last closed window: the likely size of the next
	bytes int64 // estimate of the memory the open windows hold (Bytes)
	kcost int64 // estimate of what a new key costs its window, besides its values
}

// openWindow keeps each key once, in its index: a key's position is its place in first-Add
// order, the order partials are returned in, and the place of its Stats.
type openWindow[K comparable] struct {
	start int64
	index keyIndex[K]
	stats []Stats
	bytes int64 // estimate of what the window holds (see Windows.Bytes)
}

// New returns an empty Windows for one source partition, or an error wrapping
// [ErrConfig] if cfg is invalid.
func New[K comparable](cfg Config[K]) (*Windows[K], error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	limit, err := exactLimitSetting("Config.ExactLimit", cfg.ExactLimit)
	if err != nil {
		return nil, err
	}
	w := &Windows[K]{size: int64(cfg.Size), closed: math.MinInt64, retain: cfg.Retain, limit: limit}
	w.buf.slab = true
	var k K
	// The index holds the key and a slot of its table; the key's Stats sits in the window's
	// slice.
	w.kcost = bytesPerKey(int64(unsafe.Sizeof(k))) + int64(unsafe.Sizeof(Stats{}))
	return w, nil
}

// Bytes returns an estimate of the memory the open windows hold: for each (window, key) its
// place in the window's key index, its Stats and the capacity of its value buffer or
// digest, and the storage of the key indexes kept from closed windows for the next ones.
// Memory that keys point to (the text of a string key) is not counted: keys are usually
// interned or shared.
func (w *Windows[K]) Bytes() int64 { return w.bytes }

// Size returns the window size.
func (w *Windows[K]) Size() time.Duration { return time.Duration(w.size) }

// Add adds v under key to the window containing eventTime. It returns an error, and
// changes nothing, if v is invalid ([ErrInvalidValue]), eventTime is out of range
// ([ErrOutOfRange]) or the window was already closed: its end is at or before the
// watermark of a previous [Windows.Close] (a [*LateError], which matches [ErrLate]).
func (w *Windows[K]) Add(eventTime time.Time, key K, v float64) error {
	if !validValue(v) {
		return invalidValue(v)
	}
	win, err := w.window(eventTime)
	if err != nil {
		return err
	}
	w.bytes += win.add(key, v, w)
	return nil
}

// AddKeys adds v once under each of keys (for example the endpoint, service and region of
// one request) to the window containing eventTime, computing the window once.
// Errors are those of [Windows.Add], and on error no key is changed. A key listed twice
// gets the value twice.
func (w *Windows[K]) AddKeys(eventTime time.Time, v float64, keys ...K) error {
	if !validValue(v) {
		return invalidValue(v)
	}
	win, err := w.window(eventTime)
	if err != nil {
		return err
	}
	for _, k := range keys {
		w.bytes += win.add(k, v, w)
	}
	return nil
}

// window returns the open window containing t, opening it if needed.
func (w *Windows[K]) window(t time.Time) (*openWindow[K], error) {
	ns, ok := unixNano(t)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrOutOfRange, t.Format(time.RFC3339Nano))
	}
	start := floorStart(ns, w.size)
	if l := w.last; l != nil && l.start == start {
		return l, nil
	}
	if start > math.MaxInt64-w.size {
		return nil, fmt.Errorf("%w: window of %s ends after 2262", ErrOutOfRange, t.Format(time.RFC3339Nano))
	}
	if end := start + w.size; end <= w.closed {
		return nil, &LateError{EventTime: t, WindowEnd: fromNano(end), ClosedThrough: fromNano(w.closed)}
	}
	i := 0
	for i < len(w.open) && w.open[i].start < start {
		i++
	}
	if i == len(w.open) || w.open[i].start != start {
		nw := w.newWindow(start)
		w.open = append(w.open, nil)
		copy(w.open[i+1:], w.open[i:])
		w.open[i] = nw
	}
	w.last = w.open[i]
	return w.last, nil
}

// newWindow returns an empty window, reusing a closed window's key index if there is one.
// Its Stats slice is new (the old one belongs to the partials) and sized for the last
// closed window's keys and a little more, so that it rarely grows: growing copies every
// Stats.
func (w *Windows[K]) newWindow(start int64) *openWindow[K] {
	size := w.hint + w.hint/8
	if o := w.spare; o != nil {
		w.spare = nil
		w.bytes -= o.index.capBytes()
		o.start = start
		o.index.reset(size)
		o.stats = make([]Stats, 0, size)
		return o
	}
	return &openWindow[K]{start: start, index: newKeyIndex[K](size), stats: make([]Stats, 0, size)}
}

// add adds v under key, with w's key retention, exact limit, key cost and scratch space,
// and returns by how much the estimate of the window's memory grew.
func (o *openWindow[K]) add(key K, v float64, w *Windows[K]) int64 {
	var grew int64
	i, slot, ok := o.index.find(key)
	if !ok {
		if w.retain != nil {
			key = w.retain(key)
		}
		i = o.index.add(key, slot)
		o.stats = append(o.stats, Stats{limit: w.limit})
		grew = w.kcost
	}
	st := &o.stats[i]
	before := st.footprint()
	st.add(v, &w.buf)
	grew += st.footprint() - before
	o.bytes += grew
	return grew
}

// Close closes every open window whose end is at or before watermark and returns their
// partials: windows in end order, and within a window keys in the order of their first
// Add, so that the same event sequence always gives the same partials in the same
// order. Afterwards any Add into a window ending at or before the highest watermark
// passed to Close fails with [ErrLate]. A watermark below a previous one closes nothing
// and does not move the closed-through point back. The partials' Stats belong to the
// caller, and are sealed: values sorted and digests folded, so that MarshalBinary and
// Merge read them without changing them.
func (w *Windows[K]) Close(watermark time.Time) []Partial[K] {
	wm := saturatingNano(watermark)
	if wm > w.closed {
		w.closed = wm
	}
	n, keys := 0, 0
	for _, o := range w.open {
		if o.start+w.size > w.closed {
			break
		}
		n++
		keys += len(o.stats)
	}
	if n == 0 {
		return nil
	}
	out := make([]Partial[K], 0, keys)
	for _, o := range w.open[:n] {
		start, end := fromNano(o.start), fromNano(o.start+w.size)
		base := len(out)
		out = out[:base+len(o.stats)]
		for i := range o.stats {
			st := &o.stats[i]
			st.sealWith(&w.buf)
			p := &out[base+i]
			p.Start, p.End, p.Key, p.Stats = start, end, o.index.keys[i], st
		}
		if o == w.last {
			w.last = nil
		}
		w.bytes -= o.bytes
		w.recycle(o)
	}
	m := copy(w.open, w.open[n:])
	clear(w.open[m:])
	w.open = w.open[:m]
	w.buf.dropFree()
	if m == 0 {
		w.dropSpare() // nothing open: the data stopped (an idle partition, the end of input)
	}
	return out
}

// dropSpare drops the key index kept for the next window.
func (w *Windows[K]) dropSpare() {
	if w.spare != nil {
		w.bytes -= w.spare.index.capBytes()
		w.spare = nil
	}
}

// recycle keeps o's index for a later window; its Stats now belong to the partials.
func (w *Windows[K]) recycle(o *openWindow[K]) {
	w.hint = len(o.stats)
	o.stats = nil
	o.bytes = 0
	if w.spare != nil {
		return
	}
	o.index.release() // newWindow resets the table when it takes o
	w.spare = o
	w.bytes += o.index.capBytes()
}

// ClosedThrough returns the highest watermark passed to [Windows.Close], and false if
// Close has not been called since New or Reset.
func (w *Windows[K]) ClosedThrough() (time.Time, bool) {
	if w.closed == math.MinInt64 {
		return time.Time{}, false
	}
	return fromNano(w.closed), true
}

// Reset drops every open window and forgets the closed-through watermark, leaving the
// Windows as New returned it, for example to reuse it for a newly assigned partition.
func (w *Windows[K]) Reset() {
	clear(w.open)
	w.open = w.open[:0]
	w.last = nil
	w.closed = math.MinInt64
	w.spare = nil
	w.hint = 0
	w.bytes = 0
	w.buf = scratch{slab: true}
}

// OpenWindows returns the number of open windows.
func (w *Windows[K]) OpenWindows() int { return len(w.open) }

// OpenKeys returns the number of open (window, key) aggregates.
func (w *Windows[K]) OpenKeys() int {
	n := 0
	for _, o := range w.open {
		n += len(o.stats)
	}
	return n
}
