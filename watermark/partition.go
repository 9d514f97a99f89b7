package watermark

import (
	"fmt"
	"time"
)

// RestorePoint is what survives a restart of one partition: the two sources
// [Partition.Restore] takes the watermark from. A zero time means the source
// is absent.
type RestorePoint struct {
	// Metadata is wm(P) as of the committed offset, decoded from the commit's
	// metadata string. Leave it zero when the metadata is missing or garbled.
	Metadata time.Time
	// ClosedThrough is closed_through(P) from the sink's progress. Leave it
	// zero when the sink has no progress for P.
	ClosedThrough time.Time
}

// Partition is the watermark of one source partition. Create one with
// [NewPartition] or [Set.Assign]; the zero value is a fresh partition with the
// zero [Config] that starts measuring quiet time at its first Tick.
//
// A Partition is not safe for concurrent use: the goroutine that consumes the
// partition owns it.
type Partition struct {
	cfg Config

	// wm is wm(P) in UTC without a monotonic reading, valid when wmKnown.
	wm      time.Time
	wmKnown bool

	// maxEvent is the maximum event time seen (or wm+lateness after a
	// restore), valid when hasMax.
	maxEvent time.Time
	hasMax   bool

	// since is when P's last message arrived, or, before any message, when the
	// partition was created or restored; zero until the next Tick if unknown.
	// Quiet time and the idle advance are measured from it.
	since time.Time

	observed bool // a message was observed (Observe or Touch)
	restored bool // Restore succeeded
	caughtUp bool // the caller's last report said nothing of P is unread
	idle     bool // caught up and quiet for the idle timeout, as of the last Tick
}

// NewPartition returns the watermark of a fresh partition: no data, watermark
// unknown, not caught up. It reads cfg.Clock once, to start measuring quiet
// time.
func NewPartition(cfg Config) *Partition {
	return newPartition(cfg.resolve())
}

func newPartition(c Config) *Partition {
	return &Partition{cfg: c, since: c.now()}
}

// Config returns the configuration in effect, defaults filled in.
func (p *Partition) Config() Config { return p.cfg.resolved() }

// Observe records one message of P with an event time: it raises the maximum
// event time and wm(P) with it, and ends idleness (the partition rejoins).
// arrival is when the message was consumed, read from the configured clock
// (once per poll batch is enough); a zero arrival is unknown, and quiet time
// then starts at the next Tick.
//
// Decide lateness with [Partition.IsLate] before observing the event: the
// test is against wm(P) before the event is applied. Observe late events too;
// they never lower wm(P).
//
// A message makes an earlier caught-up report stale, so the partition is not
// caught up again until the caller reports it (see [Partition.SetPosition]).
func (p *Partition) Observe(eventTime, arrival time.Time) {
	p.arrive(arrival)
	if p.hasMax && !eventTime.After(p.maxEvent) {
		return
	}
	p.maxEvent = eventTime.UTC()
	p.hasMax = true
	p.raise(p.maxEvent.Add(-p.cfg.lateness()))
}

// Touch records a message of P that carries no event time (one that failed to
// decode, for example). It counts as a message for idleness, exactly like
// [Partition.Observe], but does not move the event clock.
func (p *Partition) Touch(arrival time.Time) { p.arrive(arrival) }

func (p *Partition) arrive(arrival time.Time) {
	p.observed = true
	p.idle = false
	p.caughtUp = false
	p.since = arrival
}

// raise sets wm(P) to w if that moves it forward, and reports whether it did.
func (p *Partition) raise(w time.Time) bool {
	if p.wmKnown && !w.After(p.wm) {
		return false
	}
	p.wm = w.UTC()
	p.wmKnown = true
	return true
}

// Watermark returns wm(P) in UTC, and false when it is not known yet (a fresh
// partition that has seen no event and was restored from nothing).
func (p *Partition) Watermark() (time.Time, bool) { return p.wm, p.wmKnown }

// MaxEventTime returns the maximum event time seen in P, in UTC; false means
// unknown. After a restore it counts the restored watermark plus the lateness
// as seen (see [Partition.Restore]).
func (p *Partition) MaxEventTime() (time.Time, bool) { return p.maxEvent, p.hasMax }

// IsLate reports whether an event of the window ending at windowEnd is late:
// windowEnd <= wm(P). With wm(P) unknown nothing is late. Call it before
// [Partition.Observe] for the same event.
func (p *Partition) IsLate(windowEnd time.Time) bool {
	return p.wmKnown && !windowEnd.After(p.wm)
}

// Restore sets wm(P) after an assignment, from what survived the previous
// owner: wm(P) = max(from.Metadata, from.ClosedThrough), either of which may
// be absent (zero). With both absent the partition stays fresh. It must come
// before any message is observed and at most once; otherwise it returns an
// error wrapping [ErrNotFresh] and changes nothing.
//
// The maximum event time before the restore is not known; Restore takes it to
// be wm + lateness, the largest value consistent with wm (wm >= maxEventTime -
// lateness). The watermark formula stays monotone, and every later event
// moves wm exactly as it would have without the restart, whatever the true
// maximum was: max(wm, e - lateness) ignores the difference. The arrival of
// the last message is taken to be the moment of the restore (the clock is
// read once), so an idle advance resumes from the restored wm at wall-clock
// pace, never counting the time the partition had no owner.
func (p *Partition) Restore(from RestorePoint) error {
	if p.observed {
		return fmt.Errorf("%w: want no message observed before the restore, found one", ErrNotFresh)
	}
	if p.restored {
		return fmt.Errorf("%w: want a single restore, found a second", ErrNotFresh)
	}
	w := from.Metadata
	if from.ClosedThrough.After(w) || w.IsZero() {
		w = from.ClosedThrough
	}
	p.restored = true
	p.idle = false
	p.since = p.cfg.now()
	if w.IsZero() {
		return nil
	}
	p.raise(w)
	p.maxEvent = p.wm.Add(p.cfg.lateness())
	p.hasMax = true
	return nil
}

// SetPosition reports P's consume position (the offset of the next message
// to read) and its high watermark offset (for a read_committed consumer, the
// last stable offset). The partition is caught up when position equals
// highWatermark. Report after the messages before position were observed.
// A negative offset or a position above the high watermark returns an error
// wrapping [ErrInvalidPosition] and leaves the state unchanged.
func (p *Partition) SetPosition(position, highWatermark int64) error {
	if position < 0 || highWatermark < 0 || position > highWatermark {
		return fmt.Errorf("%w: want 0 <= position <= high watermark, got position %d, high watermark %d",
			ErrInvalidPosition, position, highWatermark)
	}
	p.SetCaughtUp(position == highWatermark)
	return nil
}

// SetCaughtUp reports whether nothing of P is unread, for callers that know it
// without offsets. A partition that is not caught up is not idle.
func (p *Partition) SetCaughtUp(caughtUp bool) {
	p.caughtUp = caughtUp
	if !caughtUp {
		p.idle = false
	}
}

// CaughtUp reports the caller's last report (see [Partition.SetPosition]),
// false when a message has been observed since.
func (p *Partition) CaughtUp() bool { return p.caughtUp }

// Tick reads the clock once and updates idleness ([Set.Tick] reads it once
// for all its partitions). The partition becomes idle when it is caught up
// and no message has arrived for the idle timeout; while idle, each Tick
// applies the idle advance
//
//	wm(P) = max(wm(P), maxEventTime(P) + (now - arrival of P's last message) - lateness)
//
// Tick reports whether it raised wm(P) that way. When it did, write the new
// watermark to P's progress before deciding any later message of P, so that
// a replay decides as this run did.
func (p *Partition) Tick() bool { return p.tick(p.cfg.now()) }

func (p *Partition) tick(now time.Time) bool {
	if !p.caughtUp {
		p.idle = false
		return false
	}
	if p.since.IsZero() { // a zero Partition: quiet from now on
		p.since = now
	}
	quiet := now.Sub(p.since)
	if idle := p.cfg.idleTimeout(); !p.idle && (idle < 0 || quiet < idle) {
		return false
	}
	p.idle = true
	if !p.hasMax {
		return false
	}
	return p.raise(p.maxEvent.Add(quiet - p.cfg.lateness()))
}

// Idle reports whether the partition was idle at the last Tick and has not
// rejoined since (by a message or a report that it is not caught up).
func (p *Partition) Idle() bool { return p.idle }

// EndOfInput raises wm(P) to t, the end-of-input watermark of a bounded run: every window
// ending at or before t closes, and any later event of such a window is late. It reports
// whether wm(P) moved. Like an idle advance, write the new watermark to P's progress before
// deciding any later message of P, so that a replay decides as this run did.
func (p *Partition) EndOfInput(t time.Time) bool { return p.raise(t) }
