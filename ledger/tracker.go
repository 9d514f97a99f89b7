package ledger

import (
	"cmp"
	"fmt"
	"slices"
)

// TopicPartition names one partition of one topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s[%d]", tp.Topic, tp.Partition) }

// String returns the commit as topic[partition]@offset with its metadata, so that %v and %+v
// show all of it (the embedded TopicPartition's String alone would hide offset and metadata).
func (c Commit) String() string {
	return fmt.Sprintf("%s@%d metadata=%q", c.TopicPartition, c.Offset, c.Metadata)
}

// Commit is one partition's offset to commit, with the metadata that restores its watermark.
// Offset is the next offset to consume, as Kafka commits it. Metadata is empty when the
// partition never had a watermark (a ledger used without windows).
type Commit struct {
	TopicPartition
	Offset   int64
	Metadata string
}

// Tracker keeps the ledgers of the partitions a consumer owns and tells what to commit.
//
// A Tracker is not safe for concurrent use; it belongs to the consumer's loop.
type Tracker struct {
	parts map[TopicPartition]*tracked
}

type tracked struct {
	p       *Partition
	last    Commit // last commit reported with MarkCommitted
	hasLast bool
}

// NewTracker returns a Tracker with no partitions.
func NewTracker() *Tracker {
	return &Tracker{parts: make(map[TopicPartition]*tracked)}
}

// Assign starts a ledger for tp. committed is the partition's committed offset (or -1 if none):
// it is not reported again by [Tracker.Commits] until the ledger moves past it.
func (t *Tracker) Assign(tp TopicPartition, committed int64) (*Partition, error) {
	if _, ok := t.parts[tp]; ok {
		return nil, fmt.Errorf("%w: %v", ErrAssigned, tp)
	}
	tr := &tracked{p: NewPartition()}
	if committed >= 0 {
		tr.last, tr.hasLast = Commit{TopicPartition: tp, Offset: committed}, true
	}
	t.parts[tp] = tr
	return tr.p, nil
}

// Partition returns the ledger of tp, or nil if tp is not assigned.
func (t *Tracker) Partition(tp TopicPartition) *Partition {
	if tr, ok := t.parts[tp]; ok {
		return tr.p
	}
	return nil
}

// Revoke drops tp's ledger and returns its final commit: ok is false when there is nothing new
// to commit. The caller commits it (its durable prefix) before handing the partition over;
// whatever was not durable is redelivered to the next owner.
func (t *Tracker) Revoke(tp TopicPartition) (c Commit, ok bool, err error) {
	tr, found := t.parts[tp]
	if !found {
		return Commit{}, false, fmt.Errorf("%w: %v", ErrNotAssigned, tp)
	}
	delete(t.parts, tp)
	c, ok = tr.next(tp)
	return c, ok, nil
}

// Drop forgets tp's ledger without a commit: for a lost assignment, where another consumer
// may already own the partition.
func (t *Tracker) Drop(tp TopicPartition) {
	delete(t.parts, tp)
}

// Commits returns, sorted by topic and partition, each partition whose committable offset or
// watermark changed since the last [Tracker.MarkCommitted] of it. Nothing is marked: a commit
// that fails is reported again, possibly further along, by the next call.
func (t *Tracker) Commits() []Commit {
	return t.AppendCommits(nil)
}

// AppendCommits is [Tracker.Commits] appending to dst, for callers that reuse a slice.
func (t *Tracker) AppendCommits(dst []Commit) []Commit {
	start := len(dst)
	for tp, tr := range t.parts {
		if c, ok := tr.next(tp); ok {
			dst = append(dst, c)
		}
	}
	slices.SortFunc(dst[start:], func(a, b Commit) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return dst
}

// MarkCommitted records that the broker accepted these commits. Commits of partitions that
// were revoked meanwhile are ignored.
func (t *Tracker) MarkCommitted(cs ...Commit) {
	for _, c := range cs {
		if tr, ok := t.parts[c.TopicPartition]; ok {
			tr.last, tr.hasLast = c, true
		}
	}
}

// Pending returns the number of entries pending over all partitions: the depth of the
// ledgers, which a consumer exports as its uncommitted messages.
func (t *Tracker) Pending() int64 {
	var n int64
	for _, tr := range t.parts {
		n += tr.p.Pending()
	}
	return n
}

// Assigned returns the assigned partitions, sorted.
func (t *Tracker) Assigned() []TopicPartition {
	out := make([]TopicPartition, 0, len(t.parts))
	for tp := range t.parts {
		out = append(out, tp)
	}
	slices.SortFunc(out, func(a, b TopicPartition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

// next returns tp's commit if it differs from the last one marked committed.
func (tr *tracked) next(tp TopicPartition) (Commit, bool) {
	off, ok := tr.p.Committable()
	if !ok {
		return Commit{}, false
	}
	c := Commit{TopicPartition: tp, Offset: off}
	if cp, ok := tr.p.Checkpoint(); ok {
		c.Metadata = EncodeMetadata(cp)
	}
	if tr.hasLast && tr.last.Offset == c.Offset && tr.last.Metadata == c.Metadata {
		return Commit{}, false
	}
	if tr.hasLast && c.Offset < tr.last.Offset {
		// Never move a committed offset back (a partition assigned at a committed offset
		// beyond what this ledger has released).
		return Commit{}, false
	}
	return c, true
}
