package ledger

import (
	"fmt"
	"math/bits"
	"time"
)

// run is a stretch of consecutive entries that share one Condition. Durability is decided per
// run, so a run is released whole, except an Ack run, which is released entry by entry from
// its front as acks arrive and therefore holds contiguous offsets only.
type run struct {
	first, last int64 // offsets of the first and last entry
	count       int64 // entries in the run (offsets may have gaps outside Ack runs)
	cond        Condition
	mark        int64    // watermark before the run's first entry (Unix ns), if hasMark
	hasMark     bool     // the partition had a watermark when the run started
	done        int64    // Ack runs: entries released from the front
	acked       []uint64 // Ack runs: bit i set once offset first+i is acked
}

// Partition is the ledger of one (topic, partition): the consumed entries that are not yet
// committable, in consumption order, grouped into runs.
//
// A Partition is not safe for concurrent use; it belongs to the loop that consumes the
// partition. Its zero value is not usable: create one with [NewPartition] or [Tracker.Assign].
type Partition struct {
	runs runQueue

	lastAdded int64 // highest offset added, or -1
	pending   int64 // entries not yet released

	closedThrough int64 // closed_through in Unix ns, if hasClosed
	hasClosed     bool
	flushed       uint64 // highest flush sequence reported

	mark    int64 // current watermark in Unix ns, if hasMark
	hasMark bool

	committable int64 // one past the longest released prefix, or -1
}

// NewPartition returns an empty partition ledger.
func NewPartition() *Partition {
	return &Partition{lastAdded: -1, committable: -1}
}

// Add records the entry at offset with the condition that makes it durable.
//
// Offsets must increase; gaps are allowed (compacted topics, transaction markers). Call Add
// before [Partition.SetWatermark] reports the watermark that results from this entry: the
// ledger remembers the watermark as of each offset it may commit at.
func (p *Partition) Add(offset int64, c Condition) error {
	if offset <= p.lastAdded {
		return fmt.Errorf("%w: offset %d added after offset %d", ErrOffsetOrder, offset, p.lastAdded)
	}
	if offset < 0 {
		return fmt.Errorf("%w: offset %d is negative", ErrOffsetOrder, offset)
	}
	p.lastAdded = offset
	p.pending++
	if t := p.runs.tail(); t != nil && t.cond == c && (!c.ack || t.extendsAck(offset, p.mark, p.hasMark)) {
		t.last = offset
		t.count++
		if c.ack {
			t.growAcks()
		}
		return nil
	}
	r := p.runs.push()
	*r = run{first: offset, last: offset, count: 1, cond: c, mark: p.mark, hasMark: p.hasMark, acked: r.acked[:0]}
	if c.ack {
		r.growAcks()
	}
	return nil
}

// extendsAck reports whether an Ack entry at offset may join this Ack run: the run holds
// contiguous offsets (so an ack finds its bit by subtraction) and one watermark (so a commit in
// the middle of the run carries the right one).
func (r *run) extendsAck(offset, mark int64, hasMark bool) bool {
	return offset == r.last+1 && hasMark == r.hasMark && (!hasMark || mark == r.mark)
}

func (r *run) growAcks() {
	for need := int((r.last-r.first)/64) + 1; len(r.acked) < need; {
		r.acked = append(r.acked, 0)
	}
}

// Ack marks the entry at offset as acknowledged. It is an error to ack an offset that was
// never added ([ErrUnknownOffset]), whose entry was released already ([ErrReleased]), that was
// added without [Ack] ([ErrNotAckable]), or that was acked before ([ErrAlreadyAcked]).
func (p *Partition) Ack(offset int64) error {
	r := p.runs.find(offset)
	if r == nil {
		first := p.lastAdded + 1 // nothing pending: everything added was released
		if head := p.runs.head(); head != nil {
			first = head.first + head.done
		}
		if offset >= 0 && offset < first && offset <= p.lastAdded {
			return fmt.Errorf("%w: offset %d is below the first pending offset %d", ErrReleased, offset, first)
		}
		return fmt.Errorf("%w: offset %d was not added to this partition (last added %d)", ErrUnknownOffset, offset, p.lastAdded)
	}
	if !r.cond.ack {
		return fmt.Errorf("%w: offset %d lies among entries with condition %v", ErrNotAckable, offset, r.cond)
	}
	i := offset - r.first
	if i < r.done {
		return fmt.Errorf("%w: offset %d", ErrAlreadyAcked, offset)
	}
	word, bit := i/64, uint64(1)<<(i%64)
	if r.acked[word]&bit != 0 {
		return fmt.Errorf("%w: offset %d", ErrAlreadyAcked, offset)
	}
	r.acked[word] |= bit
	return nil
}

// CloseThrough reports that every window ending at or before t has been written durably:
// the sink's closed_through for this partition. It never goes back; an earlier t is an error
// and changes nothing.
func (p *Partition) CloseThrough(t time.Time) error {
	n := unixNano(t)
	if p.hasClosed && n < p.closedThrough {
		return fmt.Errorf("%w: closed_through %s is before %s",
			ErrRegression, t.UTC().Format(time.RFC3339Nano), time.Unix(0, p.closedThrough).UTC().Format(time.RFC3339Nano))
	}
	p.closedThrough, p.hasClosed = n, true
	return nil
}

// Flushed reports that the state flush with sequence seq, and every earlier one, committed.
func (p *Partition) Flushed(seq uint64) error {
	if seq < p.flushed {
		return fmt.Errorf("%w: flush sequence %d is below %d", ErrRegression, seq, p.flushed)
	}
	p.flushed = seq
	return nil
}

// SetWatermark records the partition's current event-time watermark: the watermark after every
// entry added so far. The ledger keeps, per run, the watermark as of its first offset, so that
// a commit can carry the watermark that restores the partition at the committed offset.
func (p *Partition) SetWatermark(t time.Time) {
	p.mark, p.hasMark = unixNano(t), true
}

// Committable releases the durable prefix and returns the offset to commit: one past the
// longest prefix of durable entries. ok is false while nothing has been released since the
// partition was created.
func (p *Partition) Committable() (offset int64, ok bool) {
	p.release()
	return p.committable, p.committable >= 0
}

// Checkpoint returns the watermark as of the committable offset, for the commit's metadata:
// the watermark before the first entry still pending, or the current one when nothing is
// pending. ok is false when no watermark was set by then.
func (p *Partition) Checkpoint() (Checkpoint, bool) {
	p.release()
	mark, has := p.mark, p.hasMark
	if r := p.runs.head(); r != nil {
		mark, has = r.mark, r.hasMark
	}
	if !has {
		return Checkpoint{}, false
	}
	return Checkpoint{Watermark: time.Unix(0, mark).UTC()}, true
}

// Pending returns the number of entries added and not yet committable: not durable, or
// durable behind an entry that is not.
func (p *Partition) Pending() int64 {
	p.release()
	return p.pending
}

// LastAdded returns the highest offset added, or -1.
func (p *Partition) LastAdded() int64 { return p.lastAdded }

func (p *Partition) durable(c Condition) bool {
	if c.win && (!p.hasClosed || c.end > p.closedThrough) {
		return false
	}
	return c.flush <= p.flushed
}

// release pops durable runs from the head and advances committable. An Ack run whose other
// conditions hold is released entry by entry up to its first unacked entry.
func (p *Partition) release() {
	for r := p.runs.head(); r != nil && p.durable(r.cond); r = p.runs.head() {
		if r.cond.ack {
			n := r.ackedPrefix()
			if n > r.done {
				p.pending -= n - r.done
				p.committable = r.first + n
				r.done = n
			}
			if n < r.count {
				r.trimAcks()
				return
			}
		} else {
			p.pending -= r.count
			p.committable = r.last + 1
		}
		p.runs.pop()
	}
}

// trimAcks drops the bitmap words of released entries, so that a long-lived Ack run (a service
// that always has some work in flight) holds memory for its pending entries only.
func (r *run) trimAcks() {
	k := r.done / 64
	if k == 0 {
		return
	}
	n := copy(r.acked, r.acked[k:])
	r.acked = r.acked[:n]
	r.first += 64 * k
	r.done -= 64 * k
	r.count -= 64 * k
}

// ackedPrefix counts the leading acked entries of an Ack run.
func (r *run) ackedPrefix() int64 {
	n := r.done
	for n < r.count {
		// The shift fills the high bits with zeros, so the trailing ones of the shifted word
		// never run past the acks that belong to it.
		avail := 64 - n%64
		ones := int64(bits.TrailingZeros64(^(r.acked[n/64] >> (n % 64))))
		n += min(ones, avail)
		if ones < avail {
			break
		}
	}
	return min(n, r.count)
}
