package fold

import (
	"fmt"
	"iter"
	"maps"
	"slices"
	"time"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/merge"
)

// Progress is the stored progress of one source partition.
type Progress struct {
	Source sink.TopicPartition
	// ClosedThrough is zero while the partition has closed nothing (SQL NULL).
	ClosedThrough time.Time
	// Empty marks a partition that is caught up without a watermark.
	Empty bool
}

// holds reports whether the partition holds windows back (when its topic contributes).
func (p Progress) holds() bool { return !(p.Empty && p.ClosedThrough.IsZero()) }

// Partials is one stored compact row: the entries of one source for one window. A reader
// may give the row's Blob as stored (what [Codec.Encode] wrote) and leave Entries nil: the
// plan then decodes it only where it needs the entries, and for a window folded for the
// first time a range of keys at a time as [Plan.Merged] folds it, so that a fold never holds
// a large window's stored entries decoded at once. A corrupt blob then fails [Call.Plan] or
// [Plan.Merged], whichever decodes it; Merged may have passed rows of the window to its
// function before it reaches the corrupt part.
type Partials struct {
	Start, End time.Time
	Source     sink.TopicPartition
	Entries    []Entry
	Blob       []byte
}

// Folded is one stored folded row, as read: every key's merged stats of one window and the
// sources merged into them.
type Folded struct {
	Start, End time.Time
	Sources    []sink.TopicPartition
	Entries    []Entry
}

// FoldedBlob is one folded row to write: its window, how many keys it holds and its blob,
// what [Codec.Encode] writes for the [Folded] it stands for.
type FoldedBlob struct {
	Start, End time.Time
	Keys       int
	Blob       []byte
}

// Row is one merged row to write. Attrs are by the spec's attribute order, nil where no
// source carries the attribute: the writer keeps the stored value there (COALESCE).
type Row struct {
	sink.Key
	End   time.Time
	Attrs []*string
	sink.Summary
}

// Plan is everything one call writes, for the implementation to apply in one transaction.
// Its merged rows and folded rows come from [Plan.Merged], which makes the rows of a window
// folded for the first time as they are written, so that a window of many keys is never
// held whole.
type Plan struct {
	// Progress holds the progress rows that change, each with its new value, in source
	// order (the order every writer updates them in).
	Progress []Progress
	// Topics are topics contributing a partial for the first time.
	Topics []string
	// Partials holds the compact rows to write, each replacing the stored row of its
	// (window, source).
	Partials []Partials
	// Delete holds the windows whose compact rows are all deleted: folded now.
	Delete []time.Time
	// Ignored counts the partials dropped: replays of a source already folded into its
	// window, or partials of a window whose merged rows are final (see the package doc).
	Ignored int

	call     *Call
	firsts   []firstFold  // windows folded for the first time, in window order
	upsert   []Row        // merged rows of windows folded again, in window and key order
	refolded []FoldedBlob // the folded rows of windows folded again, in window order
	merged   int          // merged rows the last Merged passed on
	folded   int          // folded rows the last Merged returned
}

// firstFold is a window folded for the first time; its sources' entries are decoded when
// [Plan.Merged] folds it.
type firstFold struct {
	w *pending
}

// Inserts reports whether the plan folds a window for the first time: whether [Plan.Merged]
// passes rows with insert true, which no merged row stored before can conflict with.
func (p *Plan) Inserts() bool { return len(p.firsts) > 0 }

// Merged makes the plan's merged rows and passes them to fn in chunks, in the order they
// are written: first the rows of windows folded for the first time (insert true), window by
// window and in key order, merged a range of about size keys at a time (zero or negative: a
// window at a time) as fn asks for them; then the rows of windows folded again (insert
// false), size at a time. fn must not keep rows once it returns: the next chunk reuses
// them. It returns the folded rows to write. An error of fn stops it and is returned as it
// is. Merged may be called again, as by a write that starts over: it makes the same rows and
// the same folded rows.
func (p *Plan) Merged(size int, fn func(rows []Row, insert bool) error) ([]FoldedBlob, error) {
	p.merged, p.folded = 0, 0
	count := func(rows []Row, insert bool) error {
		p.merged += len(rows)
		return fn(rows, insert)
	}
	var out []FoldedBlob
	for _, f := range p.firsts {
		fb, err := p.call.mergeFirst(f, size, count)
		if err != nil {
			return nil, err
		}
		if fb.Keys > 0 {
			out = append(out, fb)
		}
	}
	step := size
	if step <= 0 {
		step = max(1, len(p.upsert))
	}
	for lo := 0; lo < len(p.upsert); lo += step {
		if err := count(p.upsert[lo:min(lo+step, len(p.upsert))], false); err != nil {
			return nil, err
		}
	}
	out = append(out, p.refolded...)
	p.folded = len(out)
	return out, nil
}

// Report sets the row counts of info to what p writes, for report.WriteClose: the
// merged and folded rows are those of the last [Plan.Merged].
func (p *Plan) Report(info *sink.WriteCloseInfo) {
	info.Merged = p.merged
	info.Compact = len(p.Partials)
	info.Folded = p.folded
	info.Ignored = p.Ignored
	info.Progress = len(p.Progress)
}

// Call plans one WriteClose call. Its methods are called in order: [NewCall],
// [Call.SetProgress], [Call.Plan].
type Call struct {
	spec    sink.AggregateSpec
	codec   *Codec
	batches []prepared
	windows map[time.Time]time.Time // start -> end of every window the batches hold partials of

	progress map[sink.TopicPartition]Progress
	topics   map[string]bool
	newTopic []string
	updates  []Progress
	through  time.Time
	complete bool     // some window may be complete: every holding partition closed something
	procs    int      // goroutines the call's CPU work is split over (see maxProcs)
	mergers  []merger // one per range of keys that foldKeys merges at once
}

// NewCall validates the batches of one call: a source appears at most once; times are
// made UTC at sink.Precision, partials collapsed to the last one per key and ordered by key;
// every partial's window ends after it starts and at or before its batch's ClosedThrough, and it carries only
// attributes the spec declares; the stats of every partial kept decode and hold a value; the
// partials of one window start agree on its end. Errors wrap [sink.ErrInvalid]; nothing may be written then. spec
// must have its defaults applied. The plan's folded blobs are encoded with z.
func NewCall(z *Codec, spec sink.AggregateSpec, batches []sink.CloseBatch) (*Call, error) {
	if z == nil {
		return nil, fmt.Errorf("%w: fold: nil Codec", sink.ErrInvalid)
	}
	return newCall(z, spec, batches, procs())
}

// newCall is NewCall with its goroutines given: it prepares the batches on up to procs of
// them, then checks them in order, so that the error is the one a single goroutine finds.
func newCall(z *Codec, spec sink.AggregateSpec, batches []sink.CloseBatch, procs int) (*Call, error) {
	c := &Call{spec: spec, codec: z, batches: make([]prepared, len(batches)), windows: map[time.Time]time.Time{}, procs: procs}
	errs := make([]error, len(batches))
	_ = each(procs, len(batches), func(i int) error {
		c.batches[i], errs[i] = prepare(spec, batches[i])
		return nil
	})
	seen := make(map[sink.TopicPartition]bool, len(batches))
	for i, b := range batches {
		if seen[b.Source] {
			return nil, fmt.Errorf("%w: two close batches for %s in one write", sink.ErrInvalid, b.Source)
		}
		seen[b.Source] = true
		if b.Empty && (!b.ClosedThrough.IsZero() || len(b.Partials) > 0) {
			return nil, fmt.Errorf("%w: close batch for %s: CloseBatch.Empty marks a partition without a watermark; it cannot carry a ClosedThrough or partials", sink.ErrInvalid, b.Source)
		}
		if errs[i] != nil {
			return nil, errs[i]
		}
		for _, w := range c.batches[i].windows {
			if end, ok := c.windows[w.start]; ok && !end.Equal(w.end) {
				return nil, fmt.Errorf("%w: partials of the window starting at %s end at %s and at %s", sink.ErrInvalid,
					w.start.Format(time.RFC3339), end.Format(time.RFC3339), w.end.Format(time.RFC3339))
			}
			c.windows[w.start] = w.end
		}
	}
	return c, nil
}

// Batches returns the prepared batches, in the order given: times in UTC at sink.Precision,
// partials collapsed to the last one per key and ordered by key.
func (c *Call) Batches() []sink.CloseBatch {
	out := make([]sink.CloseBatch, len(c.batches))
	for i := range c.batches {
		out[i] = c.batches[i].batch(c.spec)
	}
	return out
}

// Topics returns the distinct topics of the call's sources: the implementation reads the
// progress of every partition of these topics and of the contributing topics.
func (c *Call) Topics() []string {
	var out []string
	for _, b := range c.batches {
		if !slices.Contains(out, b.Source.Topic) {
			out = append(out, b.Source.Topic)
		}
	}
	return out
}

// Windows returns the starts of the windows the call holds partials of, ascending.
func (c *Call) Windows() []time.Time {
	return slices.SortedFunc(maps.Keys(c.windows), time.Time.Compare)
}

// Pairs returns the (window start, source) of every compact row the call may replace: the
// implementation reads those stored rows, with every row of the windows complete after the
// call (see [Call.Through]).
func (c *Call) Pairs() ([]time.Time, []sink.TopicPartition) {
	var starts []time.Time
	var srcs []sink.TopicPartition
	for _, b := range c.batches {
		for _, w := range b.windows {
			starts, srcs = append(starts, w.start), append(srcs, b.Source)
		}
	}
	return starts, srcs
}

// SetProgress takes the stored progress of every partition of [Call.Topics] and of the
// contributing topics, and the stored contributing topics, all read after the
// implementation's lock. It computes the progress updates and [Call.Through].
//
// A retried attempt calls SetProgress again with what it read; the earlier reading is
// forgotten.
func (c *Call) SetProgress(stored []Progress, topics []string) {
	c.updates, c.newTopic = nil, nil
	c.progress = make(map[sink.TopicPartition]Progress, len(stored)+len(c.batches))
	for _, p := range stored {
		p.ClosedThrough = p.ClosedThrough.UTC()
		c.progress[p.Source] = p
	}
	c.topics = make(map[string]bool, len(topics)+1)
	for _, t := range topics {
		c.topics[t] = true
	}
	for _, b := range c.batches {
		if len(b.entries) > 0 && !c.topics[b.Source.Topic] {
			c.topics[b.Source.Topic] = true
			c.newTopic = append(c.newTopic, b.Source.Topic)
		}
		cur, had := c.progress[b.Source]
		next := cur
		next.Source = b.Source
		switch {
		case !b.ClosedThrough.IsZero():
			if next.ClosedThrough.IsZero() || b.ClosedThrough.After(next.ClosedThrough) {
				next.ClosedThrough = b.ClosedThrough
			}
			next.Empty = false
		case b.Empty:
			next.Empty = true
		}
		if !had || next != cur {
			c.updates = append(c.updates, next)
		}
		c.progress[b.Source] = next
	}
	slices.SortFunc(c.updates, func(a, b Progress) int { return merge.CompareSources(a.Source, b.Source) })
	slices.Sort(c.newTopic)
	c.through, c.complete = Through(maps.Values(c.progress), func(topic string) bool { return c.topics[topic] })
}

// Through returns the bound of the complete windows given every progress row of the
// contributing topics (rows of other topics are skipped by contributes): a window is
// complete when it ends at or before t. ok is false when no window is complete because some
// holding partition has closed nothing; t is [EndOfTime] when no partition holds anything.
func Through(progress iter.Seq[Progress], contributes func(topic string) bool) (t time.Time, ok bool) {
	t = EndOfTime
	for p := range progress {
		if !contributes(p.Source.Topic) || !p.holds() {
			continue
		}
		if p.ClosedThrough.IsZero() {
			return time.Time{}, false
		}
		if p.ClosedThrough.Before(t) {
			t = p.ClosedThrough
		}
	}
	return t, true
}

// EndOfTime stands for "every window" where a time bounds the complete windows.
var EndOfTime = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// Through returns the bound of the windows complete after the call: a window is complete
// when it ends at or before t. ok is false when no window is complete: some holding
// partition has closed nothing yet.
func (c *Call) Through() (t time.Time, ok bool) { return c.through, c.complete }

func (c *Call) isComplete(end time.Time) bool { return c.complete && !end.After(c.through) }
