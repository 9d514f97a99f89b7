package consumer

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/window"
)

// Until is where a bounded Run stops each partition; [Config.Until] says what a bounded run
// reads and writes. Set at most one field; the zero Until runs until Run's context is
// cancelled. A bounded run needs auto.offset.reset in the Kafka configuration: a partition
// without a committed offset starts where it says, and Run stops it at once when that is at
// or past its stop.
type Until struct {
	// End stops each partition at its end offset (its high watermark, or its last stable
	// offset for a read_committed consumer) as of when Run first learns of the partition,
	// which for the partitions of the topics assigned first is when Run starts.
	End bool
	// Time stops each partition at its first message whose timestamp is at or after Time
	// (the broker's offset for the time); a partition without such a message stops at its
	// end as of then.
	Time time.Time
	// Offsets stops each listed partition before the given offset. A partition not listed
	// stops at its end as of when Run first learns of it.
	Offsets map[ledger.TopicPartition]int64
}

// bounded reports whether u bounds Run.
func (u Until) bounded() bool { return u.End || !u.Time.IsZero() || len(u.Offsets) > 0 }

// validate checks that at most one field is set and that the offsets are offsets.
func (u Until) validate() error {
	set := 0
	for _, b := range []bool{u.End, !u.Time.IsZero(), len(u.Offsets) > 0} {
		if b {
			set++
		}
	}
	if set > 1 {
		return fmt.Errorf("%w: Until: expected at most one of End, Time and Offsets, found %d", ErrConfig, set)
	}
	for tp, off := range u.Offsets {
		if off < 0 {
			return fmt.Errorf("%w: Until.Offsets: %s: expected an offset >= 0, found %d", ErrConfig, tp, off)
		}
	}
	return nil
}

// Reset policies of auto.offset.reset, by what they name.
var (
	resetEarliest = []string{"earliest", "smallest", "beginning"}
	resetLatest   = []string{"latest", "largest", "end"}
	resetError    = []string{"error", "none"}
)

// resetPolicy returns the auto.offset.reset of km, set at the top level or in
// default.topic.config, and whether it is set.
func resetPolicy(km kafka.ConfigMap) (string, bool) {
	v, ok := km["auto.offset.reset"]
	if !ok {
		if dt, isMap := km["default.topic.config"].(kafka.ConfigMap); isMap {
			v, ok = dt["auto.offset.reset"]
		}
	}
	if !ok {
		return "", false
	}
	return strings.ToLower(fmt.Sprint(v)), true
}

// checkReset refuses a bounded Until with auto.offset.reset unset: on a partition without a
// committed offset the policy decides where Run starts, and librdkafka's default, latest,
// reads nothing, which a bounded run would then report as done.
func checkReset(km kafka.ConfigMap, u Until) error {
	if !u.bounded() {
		return nil
	}
	if _, ok := resetPolicy(km); !ok {
		return configError("Until: a bounded run needs auto.offset.reset in Kafka (earliest, latest or error): on a " +
			"group without a committed offset it decides where a partition starts, and librdkafka's default, latest, " +
			"reads nothing")
	}
	return nil
}

// startOffsets decides where each newly assigned partition of as starts, from its offsets
// read of the broker: at its committed offset, or at its log start when the committed offset
// is below it (the range between is lost: lostAtAssign reports it, and under LostStop the
// partition starts at its committed offset, which Run stops before deciding anything past);
// without a committed offset, where auto.offset.reset says (earliest: its log start; latest or
// unset: its end; error: Run stops with an error wrapping ErrAssign). Each start is handed to
// the client as an explicit offset, so that the client's own reset policy (error, see
// forceResetError) never moves a partition, and Run knows a partition with nothing to read
// below its stop (restore then counts it as having reached its stop at once). A committed
// offset past the log end stops Run (beyondEnd).
func (c *Consumer[K]) startOffsets(ctx context.Context, kc *kafka.Consumer, as []assignment) error {
	policy := c.s.reset
	for i := range as {
		a := &as[i]
		if a.committed < 0 && slices.Contains(resetError, policy) {
			return fmt.Errorf("%w: %s has no committed offset and auto.offset.reset is %s", ErrAssign, a.tp, policy)
		}
		lo, hi, err := kc.QueryWatermarkOffsets(a.tp.Topic, a.tp.Partition, timeoutMs(ctx, 10*time.Second))
		if err != nil {
			return fmt.Errorf("%w: reading the log start and end of %s: %w", ErrAssign, a.tp, err)
		}
		a.logStart = lo
		switch {
		case a.committed > hi:
			return beyondEnd(a.tp, a.committed, hi)
		case a.committed >= lo:
			a.start = a.committed
		case a.committed >= 0 && c.s.LostRecords == LostStop:
			a.start = a.committed
		case a.committed >= 0:
			a.start = lo
		case slices.Contains(resetEarliest, policy):
			a.start = lo
		case policy == "" || slices.Contains(resetLatest, policy):
			a.start = hi
		default:
			return fmt.Errorf("%w: %s has no committed offset, and auto.offset.reset %q names no start", ErrAssign, a.tp, policy)
		}
	}
	return nil
}

// stopOffsets computes the stop offset of each partition of tps not known yet: from
// Until.Offsets, the offsets for Until.Time, or the end offsets, read from the broker.
func (c *Consumer[K]) stopOffsets(ctx context.Context, kc *kafka.Consumer, tps []ledger.TopicPartition) error {
	u := c.s.Until
	var todo []ledger.TopicPartition
	for _, tp := range tps {
		if _, ok := c.stops[tp]; ok {
			continue
		}
		if off, ok := u.Offsets[tp]; ok {
			c.stops[tp] = off
			continue
		}
		todo = append(todo, tp)
	}
	if len(todo) == 0 {
		return nil
	}
	if !u.Time.IsZero() {
		if err := c.offsetsForTime(ctx, kc, todo); err != nil {
			return err
		}
	}
	for _, tp := range todo {
		if _, ok := c.stops[tp]; ok {
			continue
		}
		_, hi, err := kc.QueryWatermarkOffsets(tp.Topic, tp.Partition, timeoutMs(ctx, 10*time.Second))
		if err != nil {
			return fmt.Errorf("%w: reading the end offset of %s: %w", ErrAssign, tp, err)
		}
		c.stops[tp] = hi
	}
	return nil
}

// offsetsForTime stores the broker's offset for Until.Time of each of tps that has a
// message at or after it.
func (c *Consumer[K]) offsetsForTime(ctx context.Context, kc *kafka.Consumer, tps []ledger.TopicPartition) error {
	query := make([]kafka.TopicPartition, len(tps))
	for i, tp := range tps {
		topic := tp.Topic
		query[i] = kafka.TopicPartition{Topic: &topic, Partition: tp.Partition, Offset: kafka.Offset(c.s.Until.Time.UnixMilli())}
	}
	got, err := kc.OffsetsForTimes(query, timeoutMs(ctx, 10*time.Second))
	if err != nil {
		return fmt.Errorf("%w: reading the offsets for %s: %w", ErrAssign, c.s.Until.Time.Format(time.RFC3339), err)
	}
	for _, r := range got {
		if r.Topic != nil && r.Error == nil && r.Offset >= 0 {
			c.stops[ledger.TopicPartition{Topic: *r.Topic, Partition: r.Partition}] = int64(r.Offset)
		}
	}
	return nil
}

// timeoutMs is what is left of ctx's deadline, at most limit, in milliseconds (at least 1).
func timeoutMs(ctx context.Context, limit time.Duration) int {
	d := limit
	if dl, ok := ctx.Deadline(); ok {
		d = min(time.Until(dl), d)
	}
	return max(int(d/time.Millisecond), 1)
}

// reachedStop records that every message of pt below its stop offset was dispatched: it
// fetches nothing more (once the client holds the partition: pause), and the next tick
// closes its windows with the end-of-input watermark.
func (p *processor[K]) reachedStop(pt *part[K], pause bool) {
	if pt.ended {
		return
	}
	pt.ended = true
	p.endedSinceTick = true
	if pause {
		p.pauseEnded(pt)
	}
	p.log.Info("partition reached its stop offset", "partition", pt.tp.String(), "stop", pt.stop)
}

// pauseEnded stops the client fetching a partition that reached its stop.
func (p *processor[K]) pauseEnded(pt *part[K]) {
	if err := p.cl.Pause([]kafka.TopicPartition{pt.ktp}); err != nil {
		p.log.Warn("pause at the stop offset failed", "partition", pt.tp.String(), "error", err)
	}
}

// nextOpenEnd is the end of pt's earliest open window holding data that ends past its
// watermark (those at or before it close anyway), 0 if none.
func nextOpenEnd[K comparable](pt *part[K]) int64 {
	var from int64
	if wm, ok := pt.wm.Watermark(); ok {
		from = wm.UnixNano()
	}
	var next int64
	for end := range pt.open {
		if end > from {
			next = min(cmp.Or(next, end), end)
		}
	}
	return next
}

// endOfInput applies the end-of-input watermark to a partition that reached its stop: first
// one window a tick, the end of its earliest open window holding data past its watermark,
// until its own last one has closed; then, once every owned partition got there and
// resolveInputEnd knows the input's end, that end. So every window closes and is written,
// also one that holds data of other partitions only, while a later run of the same group
// still admits events of later windows; and a partition that ends with several windows open
// writes them one after another rather than holding all their partials and the sink's
// working copy at once. Each step asks for another tick, which runs once the step's write is
// done.
func (p *processor[K]) endOfInput(pt *part[K]) {
	if !pt.ended || pt.finished {
		return
	}
	if next := nextOpenEnd(pt); next != 0 {
		pt.wm.EndOfInput(time.Unix(0, next).UTC())
		if nextOpenEnd(pt) != 0 {
			p.endedSinceTick = true
			return
		}
	}
	if !pt.ownClosed {
		pt.ownClosed = true
		p.endedSinceTick = true // the tick that resolves the input's end, once all got here
	}
	if !p.endKnown {
		return
	}
	if p.inputEnd != 0 {
		pt.wm.EndOfInput(time.Unix(0, p.inputEnd).UTC())
	}
	pt.finished = true
}

// resolveInputEnd computes, once every owned partition reached its stop and closed its own
// windows, the end of the input: the latest end of a window that may hold data of any
// partition of the topics, which is the latest end of a window an owned partition admitted
// an event to or had closed at its assignment, and the latest closed_through of the other
// registered partitions in the sink (owned by other members of the group, or by none). It
// runs at a tick with no write in flight, before the partitions' closes, which then raise
// every owned partition's watermark to it; a failed read of the sink is retried at the next
// tick. It changes nothing outside a bounded run with a sink, nor once known: a rebalance
// makes it unknown again.
func (p *processor[K]) resolveInputEnd(ctx context.Context) {
	if p.endKnown || p.s.Sink == nil || !p.s.Until.bounded() || len(p.order) == 0 {
		return
	}
	var end int64
	for _, pt := range p.order {
		if !pt.ended || !pt.ownClosed {
			return
		}
		end = max(end, pt.holds)
	}
	others := p.registeredParts(func(tp ledger.TopicPartition) bool { return p.parts[tp] == nil })
	if len(others) > 0 {
		rctx, cancel := context.WithTimeout(ctx, p.s.WriteTimeout)
		ct, err := p.s.Sink.ClosedThrough(rctx, others...)
		cancel()
		if err != nil {
			p.log.Warn("reading closed_through of the partitions not owned failed; retrying at the next tick", "error", err)
			p.endedSinceTick = true
			return
		}
		for _, t := range ct {
			end = max(end, t.UnixNano())
		}
	}
	p.inputEnd, p.endKnown = end, true
	for _, pt := range p.order {
		pt.finished = false
	}
}

// registeredParts returns the partitions registered (or to register) with the sink for which
// keep reports true, sorted: every partition of the topics assigned so far.
func (p *processor[K]) registeredParts(keep func(ledger.TopicPartition) bool) []ledger.TopicPartition {
	var out []ledger.TopicPartition
	for tp := range p.registered {
		if keep(tp) {
			out = append(out, tp)
		}
	}
	for _, tp := range p.toRegister {
		if !p.registered[tp] && keep(tp) {
			out = append(out, tp)
		}
	}
	slices.SortFunc(out, compareTP)
	return out
}

// boundedDone reports whether a bounded Run is done: it was assigned partitions at least
// once, and every partition it owns reached its stop, is written and committed through the
// input's end, with no write in flight.
func (p *processor[K]) boundedDone() bool {
	if !p.s.Until.bounded() || !p.assignedOnce || p.job != nil || p.tickDue {
		return false
	}
	windows := p.s.Sink != nil // without a sink there are no windows to close
	if windows && len(p.order) > 0 && !p.endKnown {
		return false
	}
	for _, pt := range p.order {
		if !pt.ended || (windows && !pt.finished) || pt.paused&pauseWrite != 0 || len(pt.unwritten) > 0 || pt.led.Pending() > 0 {
			return false
		}
	}
	for _, c := range p.tracker.AppendCommits(p.commitBuf[:0]) {
		if p.parts[c.TopicPartition] != nil {
			return false // committable, not yet committed
		}
	}
	return true
}

// completeReader is what a sink may tell of the readiness of its merged rows; every
// sink.Reader does (sink/postgres, sink/mysql, sinktest.Memory).
type completeReader interface {
	CompleteThrough(ctx context.Context, topics ...string) (time.Time, bool, error)
}

// reportIncomplete logs, at the end of a bounded run, the windows whose merged rows it leaves
// incomplete: those ending after the closed_through of a partition of the topics that this
// consumer does not own, up to the end of the last window it wrote. Their merged rows are
// written once those partitions' owners close past them. A sink that tells its readiness
// (completeReader) settles whether any is incomplete, and which partitions that have closed
// nothing hold windows back (not those marked empty); otherwise every such partition is
// named.
func (p *processor[K]) reportIncomplete(ctx context.Context) {
	var last int64
	for _, pt := range p.order {
		last = max(last, pt.lastData)
	}
	if p.s.Sink == nil || last == 0 {
		return
	}
	lastEnd := time.Unix(0, last).UTC()
	rctx, cancel := context.WithTimeout(ctx, p.s.WriteTimeout)
	defer cancel()
	skipNone := false // partitions that closed nothing hold nothing back
	if cr, ok := p.s.Sink.(completeReader); ok {
		t, holding, err := cr.CompleteThrough(rctx, p.s.topics...)
		if err == nil && (!holding || !t.Before(lastEnd)) {
			return
		}
		skipNone = err == nil && !t.IsZero()
	}
	tps := p.registeredParts(func(ledger.TopicPartition) bool { return true })
	ct, err := p.s.Sink.ClosedThrough(rctx, tps...)
	if err != nil {
		p.log.Warn("checking that the merged rows are complete failed", "error", err)
		return
	}
	var behind []string
	from := lastEnd
	for _, tp := range tps {
		t, ok := ct[tp]
		if (ok && !t.Before(lastEnd)) || (!ok && skipNone) {
			continue
		}
		through := "none"
		if ok {
			through = t.Format(time.RFC3339Nano)
		}
		if t.Before(from) { // the zero time when it closed nothing
			from = t
		}
		behind = append(behind, fmt.Sprintf("%s closed_through=%s (%s)", tp, through, p.whyNotOwned(tp)))
	}
	if len(behind) == 0 {
		return
	}
	windows := "every window"
	if !from.IsZero() {
		first, _ := window.Bounds(from, p.s.WindowSize)
		windows = "from " + first.Format(time.RFC3339)
	}
	p.log.Warn("bounded run done with merged rows left incomplete: their windows wait for partitions this consumer "+
		"does not own to close past them", "windows", windows+" through the one ending "+lastEnd.Format(time.RFC3339),
		"partitions", behind)
}

// whyNotOwned says why the consumer does not own tp at the end of a bounded run.
func (p *processor[K]) whyNotOwned(tp ledger.TopicPartition) string {
	if p.held[tp] {
		return "revoked from this consumer during the run: another member of the group owns it"
	}
	return "not assigned to this consumer in this run: another member of the group owns it, or no member has consumed it"
}

// pauseEndedAll pauses, after an assignment, the owned partitions that start at their stop.
func (p *processor[K]) pauseEndedAll() {
	for _, pt := range p.order {
		if pt.ended {
			p.pauseEnded(pt)
		}
	}
}
