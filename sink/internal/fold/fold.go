package fold

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/merge"
)

// pending is what a plan knows of one window.
type pending struct {
	start, end time.Time
	stored     map[sink.TopicPartition]*Partials // compact rows read, maybe still encoded
	batch      map[sink.TopicPartition][]Entry   // this call's partials
	folded     *Folded
	final      bool
}

// Plan computes the call's writes from the stored rows the implementation read after
// [Call.SetProgress], in statements that follow its lock:
//
//   - partials: the compact rows of [Call.Pairs] and every compact row of a window that
//     ends at or before [Call.Through] (when ok);
//   - folded: the folded rows of [Call.Windows] and of the windows of those partials;
//   - final: the starts among [Call.Windows] of windows with stored merged rows.
//
// Rows of other windows are harmless: a window is folded when complete and otherwise left
// alone. Corrupt stored stats fail the plan.
func (c *Call) Plan(partials []Partials, folded []Folded, final []time.Time) (*Plan, error) {
	out := &Plan{Progress: c.updates, Topics: c.newTopic, call: c}
	wins := map[time.Time]*pending{}
	get := func(start, end time.Time) (*pending, error) {
		start, end = start.UTC(), end.UTC()
		w := wins[start]
		if w == nil {
			w = &pending{start: start, end: end, stored: map[sink.TopicPartition]*Partials{}, batch: map[sink.TopicPartition][]Entry{}}
			wins[start] = w
		} else if !w.end.Equal(end) {
			return nil, fmt.Errorf("%w: the window starting at %s ends at %s and at %s", sink.ErrInvalid,
				start.Format(time.RFC3339), w.end.Format(time.RFC3339), end.Format(time.RFC3339))
		}
		return w, nil
	}
	for _, b := range c.batches {
		for _, sp := range b.windows {
			w, err := get(sp.start, sp.end)
			if err != nil {
				return nil, err
			}
			w.batch[b.Source] = b.entries[sp.lo:sp.hi]
		}
	}
	for i := range partials {
		p := &partials[i]
		w, err := get(p.Start, p.End)
		if err != nil {
			return nil, err
		}
		w.stored[p.Source] = p
	}
	for i := range folded {
		w, err := get(folded[i].Start, folded[i].End)
		if err != nil {
			return nil, err
		}
		w.folded = &folded[i]
	}
	for _, s := range final {
		if w := wins[s.UTC()]; w != nil {
			w.final = true
		}
	}
	starts := make([]time.Time, 0, len(wins))
	for s := range wins {
		starts = append(starts, s)
	}
	slices.SortFunc(starts, time.Time.Compare)
	for _, s := range starts {
		if err := c.planWindow(out, wins[s]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (c *Call) planWindow(out *Plan, w *pending) error {
	switch {
	case w.folded != nil:
		return c.refold(out, w)
	case w.final:
		for _, es := range w.batch {
			out.Ignored += len(es)
		}
		if len(w.stored) > 0 {
			out.Delete = append(out.Delete, w.start)
		}
		return nil
	case c.isComplete(w.end):
		c.fold(out, w)
		return nil
	}
	for _, src := range sortedSources(w.batch) {
		stored, err := c.storedEntries(w.stored[src])
		if err != nil {
			return err
		}
		out.Partials = append(out.Partials, Partials{Start: w.start, End: w.end, Source: src,
			Entries: replaceEntries(stored, w.batch[src])})
	}
	return nil
}

// storedEntries returns the entries of a stored compact row (none for nil), decoding its
// blob where the reader left it encoded.
func (c *Call) storedEntries(p *Partials) ([]Entry, error) {
	switch {
	case p == nil:
		return nil, nil
	case p.Entries != nil || p.Blob == nil:
		return p.Entries, nil
	}
	bl, err := c.codec.Decode(p.Blob, c.spec.Attributes)
	if err != nil {
		return nil, storedError(p.Source, p.Start, err)
	}
	return bl.Entries, nil
}

// sources returns the stored and batch sources of w in order, each with its entries: the
// stored ones (decoded now where they are still encoded) with the batch's replacing them key
// by key. skip leaves sources out.
func (c *Call) sources(w *pending, skip func(sink.TopicPartition) bool) ([]sink.TopicPartition, [][]Entry, error) {
	var srcs []sink.TopicPartition
	var lists [][]Entry
	for _, s := range w.sources() {
		if skip != nil && skip(s) {
			continue
		}
		stored, err := c.storedEntries(w.stored[s])
		if err != nil {
			return nil, nil, err
		}
		srcs = append(srcs, s)
		lists = append(lists, replaceEntries(stored, w.batch[s]))
	}
	return srcs, lists, nil
}

// sources returns the sources of w's stored rows and batches, in order, each once.
func (w *pending) sources() []sink.TopicPartition {
	all := sortedSources(w.stored)
	for _, s := range sortedSources(w.batch) {
		if _, ok := w.stored[s]; !ok {
			all = append(all, s)
		}
	}
	slices.SortFunc(all, merge.CompareSources)
	return all
}

// fold plans the first fold of a complete window: every key merged over its sources, as
// [Plan.Merged] asks for the rows.
func (c *Call) fold(out *Plan, w *pending) {
	out.firsts = append(out.firsts, firstFold{w: w})
	if len(w.stored) > 0 {
		out.Delete = append(out.Delete, w.start)
	}
}

// mergeFirst merges the keys of a first fold in chunks of about size keys, passes each
// chunk's rows to fn as they are made, and returns the folded row (Keys zero for a window
// without keys, which writes none). The stored entries are decoded a chunk at a time (see
// chunker).
func (c *Call) mergeFirst(f firstFold, size int, fn func(rows []Row, insert bool) error) (FoldedBlob, error) {
	k, err := c.newChunker(f.w, size)
	if err != nil {
		return FoldedBlob{}, err
	}
	ew := newEntryWriter(c.spec.Attributes, k.largest())
	var rows []Row // a chunk's, reused by the next: fn does not keep them
	var entries []Entry
	for {
		ok, err := k.next()
		if err != nil {
			return FoldedBlob{}, err
		}
		if !ok {
			break
		}
		clear(rows)
		clear(entries)
		rows, entries, err = c.foldKeys(f.w, k.lists, rows[:0], entries[:0])
		if err != nil {
			return FoldedBlob{}, err
		}
		for i := range entries {
			if err := ew.add(&entries[i]); err != nil {
				return FoldedBlob{}, err
			}
		}
		if len(rows) > 0 {
			if err := fn(rows, true); err != nil {
				return FoldedBlob{}, err
			}
		}
	}
	if ew.n == 0 {
		return FoldedBlob{}, nil
	}
	blob, err := ew.encode(c.codec, k.sources())
	return FoldedBlob{Start: f.w.start, End: f.w.end, Keys: ew.n, Blob: blob}, err
}

// foldKeys merges every key of lists (each ordered by key) into its merged row and folded
// entry, appended to rows and entries in key order. A large window's keys are cut into ranges
// (split) merged on goroutines of their own, each into its own place in rows and entries, so
// that the outcome, and the error when one key fails (the first in key order), are a single
// goroutine's. The distinct keys are counted first, so that rows and entries grow once,
// however much the lists' keys overlap. The entries' stats are valid until the next
// foldKeys of c (see merger).
func (c *Call) foldKeys(w *pending, lists [][]Entry, rows []Row, entries []Entry) ([]Row, []Entry, error) {
	parts := c.split(lists)
	at := make([]int, len(parts)+1) // where each range's rows begin in rows, then the end
	at[0] = len(rows)
	_ = each(len(parts), len(parts), func(k int) error {
		at[k+1] = distinctKeys(parts[k])
		return nil
	})
	for k := range parts {
		at[k+1] += at[k]
	}
	rows, entries = slices.Grow(rows, at[len(parts)]-len(rows)), slices.Grow(entries, at[len(parts)]-len(entries))
	rows, entries = rows[:at[len(parts)]], entries[:at[len(parts)]]
	if len(c.mergers) < len(parts) {
		c.mergers = make([]merger, len(parts))
	}
	err := each(len(parts), len(parts), func(k int) error {
		i := at[k]
		m := &c.mergers[k]
		m.reset()
		return groups(parts[k], func(g []*Entry, _ []int) error {
			var err error
			rows[i], entries[i], err = m.merge(c.spec, w, g)
			i++
			return err
		})
	})
	return rows, entries, err
}

// distinctKeys counts the distinct keys of lists (each ordered by key).
func distinctKeys(lists [][]Entry) int {
	n := 0
	_ = groups(lists, func([]*Entry, []int) error { n++; return nil })
	return n
}

// split cuts lists for c.procs goroutines: a window of fewer than parallelMin entries stays
// whole.
func (c *Call) split(lists [][]Entry) [][][]Entry {
	total := 0
	for _, l := range lists {
		total += len(l)
	}
	if total < parallelMin {
		return [][][]Entry{lists}
	}
	return cut(lists, c.procs)
}

// cut cuts lists (each ordered by key, a key at most once per list) into n ranges of keys,
// at evenly spaced keys of the longest list, so that all entries of a key fall in one range
// and each range holds about 1/n of the longest list's keys.
func cut(lists [][]Entry, n int) [][][]Entry {
	if n <= 1 {
		return [][][]Entry{lists}
	}
	longest := 0
	for i, l := range lists {
		if len(l) > len(lists[longest]) {
			longest = i
		}
	}
	parts := make([][][]Entry, n)
	for k := range parts {
		parts[k] = make([][]Entry, len(lists))
	}
	ref := lists[longest]
	for i, l := range lists {
		lo := 0
		for k := 1; k < n; k++ {
			pivot := &ref[len(ref)*k/n]
			hi := lo + sort.Search(len(l)-lo, func(j int) bool { return compareEntries(&l[lo+j], pivot) >= 0 })
			parts[k-1][i] = l[lo:hi]
			lo = hi
		}
		parts[n-1][i] = l[lo:]
	}
	return parts
}

// refold merges the partials of sources not yet folded into a folded window: Merge(folded,
// the new sources in order). Partials of folded sources are replays and are dropped.
func (c *Call) refold(out *Plan, w *pending) error {
	f := w.folded
	in := func(s sink.TopicPartition) bool {
		_, ok := slices.BinarySearchFunc(f.Sources, s, merge.CompareSources)
		return ok
	}
	for s, es := range w.batch {
		if in(s) {
			out.Ignored += len(es)
		}
	}
	srcs, lists, err := c.sources(w, in)
	if err != nil {
		return err
	}
	if len(w.stored) > 0 {
		out.Delete = append(out.Delete, w.start)
	}
	if len(srcs) == 0 {
		return nil
	}
	sources := slices.Clone(f.Sources)
	for i, s := range srcs {
		if len(lists[i]) > 0 {
			sources = append(sources, s)
		}
	}
	slices.SortFunc(sources, merge.CompareSources)
	ew := newEntryWriter(c.spec.Attributes, max(len(f.Entries), largest(lists)))
	var m merger
	err = groups(append([][]Entry{f.Entries}, lists...), func(g []*Entry, from []int) error {
		if len(g) == 1 && from[0] == 0 {
			return ew.add(g[0])
		}
		m.reset()
		row, e, err := m.merge(c.spec, w, g)
		if err != nil {
			return err
		}
		out.upsert = append(out.upsert, row)
		return ew.add(&e)
	})
	if err != nil {
		return err
	}
	blob, err := ew.encode(c.codec, sources)
	if err != nil {
		return err
	}
	out.refolded = append(out.refolded, FoldedBlob{Start: w.start, End: w.end, Keys: ew.n, Blob: blob})
	return nil
}

// largest returns the length of the longest of lists: the fewest distinct keys they can
// hold.
func largest(lists [][]Entry) int {
	n := 0
	for _, l := range lists {
		n = max(n, len(l))
	}
	return n
}

// groups calls fn once per distinct key over lists (each ordered by key), in key order,
// with the key's entries in list order and the index of the list of each.
func groups(lists [][]Entry, fn func(g []*Entry, from []int) error) error {
	heads := make([]int, len(lists))
	var g []*Entry
	var src []int
	for {
		var least *Entry
		for i, l := range lists {
			if heads[i] < len(l) && (least == nil || compareEntries(&l[heads[i]], least) < 0) {
				least = &l[heads[i]]
			}
		}
		if least == nil {
			return nil
		}
		g, src = g[:0], src[:0]
		for i, l := range lists {
			if heads[i] < len(l) && compareEntries(&l[heads[i]], least) == 0 {
				g = append(g, &l[heads[i]])
				src = append(src, i)
				heads[i]++
			}
		}
		if err := fn(g, src); err != nil {
			return err
		}
	}
}

// replaceEntries returns stored with each key of next replacing it (next's missing
// attributes keep the stored ones), both ordered by key. Where one of them is empty it
// returns the other, not a copy.
func replaceEntries(stored, next []Entry) []Entry {
	if len(stored) == 0 {
		return next
	}
	if len(next) == 0 {
		return stored
	}
	out := make([]Entry, 0, len(stored)+len(next))
	i, j := 0, 0
	for i < len(stored) || j < len(next) {
		switch {
		case j == len(next) || i < len(stored) && compareEntries(&stored[i], &next[j]) < 0:
			out = append(out, stored[i])
			i++
		case i == len(stored) || compareEntries(&stored[i], &next[j]) > 0:
			out = append(out, next[j])
			j++
		default:
			e := next[j]
			e.Attrs = coalesce(e.Attrs, stored[i].Attrs)
			out = append(out, e)
			i++
			j++
		}
	}
	return out
}

func coalesce(a, b []*string) []*string {
	if !slices.Contains(a, nil) {
		return a
	}
	out := slices.Clone(a)
	for j := range out {
		if out[j] == nil && j < len(b) {
			out[j] = b[j]
		}
	}
	return out
}

func sortedSources[V any](m map[sink.TopicPartition]V) []sink.TopicPartition {
	out := make([]sink.TopicPartition, 0, len(m))
	for s := range m {
		out = append(out, s)
	}
	slices.SortFunc(out, merge.CompareSources)
	return out
}
