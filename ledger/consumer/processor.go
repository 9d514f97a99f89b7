package consumer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/streamledger/streamledger/dlq/dlqkafka"
	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/watermark"
	"github.com/streamledger/streamledger/window"
)

// client is what the processor needs of the Kafka consumer; *kafka.Consumer implements it.
type client interface {
	CommitOffsets(offsets []kafka.TopicPartition) ([]kafka.TopicPartition, error)
	Pause(partitions []kafka.TopicPartition) error
	Resume(partitions []kafka.TopicPartition) error
	Seek(partition kafka.TopicPartition, ignoredTimeoutMs int) error
	GetWatermarkOffsets(topic string, partition int32) (low, high int64, err error)
	Position(partitions []kafka.TopicPartition) ([]kafka.TopicPartition, error)
}

// Reasons a partition is paused; it fetches again when none is left.
const (
	pauseWrite   uint8 = 1 << iota // its close or progress write failed: decide nothing more until it succeeds
	pausePending                   // the ledger passed MaxPending
	pauseKeys                      // the open windows passed MaxOpenKeys
)

// backpressureEvery is how many decided messages pass between two checks of the bounds
// outside ticks.
const backpressureEvery = 1024

// processor is the consumer's loop state: every partition's ledger, watermark and windows,
// the buffered state rows and the dead letters in flight. It is driven by one goroutine
// (Run's), through handle, tick, assign and revoke, and talks to Kafka only through client,
// so that its decisions are tested without a broker.
type processor[K comparable] struct {
	s   *settings[K]
	log *slog.Logger
	cl  client

	tracker *ledger.Tracker
	parts   map[ledger.TopicPartition]*part[K]
	order   []*part[K] // parts sorted by topic and partition: ticks run in a fixed order
	epoch   uint64     // assignments so far

	state     map[string][]sink.StateRow // rows of the next flush, by table
	stateRows int
	seq       uint64 // sequence number of the next flush, from 1

	inbox     *inbox
	reportBuf []report
	resends   []*letter

	commitBuf    []ledger.Commit
	sinceCheck   int       // messages decided since the last backpressure check
	ticks        uint64    // ticks so far
	tickedAt     time.Time // when the last tick began (now), for FlushWhenCaughtUp
	consumedAt   int64     // counters.consumed when the last tick began
	keysPausedAt uint64    // tick of the last pause for open windows
	overWarned   bool      // the ledger bound was passed with nothing that pausing could drain

	job     *writeJob[K]     // the writes in flight, if any
	jobDone chan struct{}    // receives when the job's writes are done
	tickDue bool             // a tick came while a job was in flight
	waited  time.Duration    // how long the due tick waited for the job (TickInfo.Waited)
	spawn   func(func())     // starts a job's writes off the loop (tests make it deterministic)
	now     func() time.Time // the wall clock of ticks (tests replace it)

	counters counters
	fatal    error // set when Run must stop; nothing is committed after it
	halt     error // set when Run must stop after committing what is durable (an effect failed)
}

// part is the state of one owned partition.
type part[K comparable] struct {
	tp      ledger.TopicPartition
	ktp     kafka.TopicPartition
	handler Handler[K]
	epoch   uint64

	led *ledger.Partition
	wm  *watermark.Partition
	win *window.Windows[K]

	unwritten  []sink.Partial // closed partials not yet written, in close order
	written    time.Time      // closed_through last written (or read at assignment)
	hasWritten bool

	committed int64 // committed offset at assignment, -1 if none
	next      int64 // offset after the last decided message, -1 before the first
	paused    uint8 // pause reasons
	seekTo    int64 // where to fetch again after messages were dropped while paused; -1 if none
	inflight  int   // dead letters waiting for a report

	open        map[int64]openWindow // admitted entries per open window, by end (Unix ns)
	openEntries int64
	firstAdded  int64 // first offset added in this assignment, -1 before
	lag         int64

	consumed, admitted, late, dead int64
}

// openWindow counts the ledger entries of one open window.
type openWindow struct {
	entries int64
	first   int64 // lowest offset
}

type counters struct {
	consumed, admitted, late, dead atomic.Int64
	effects                        atomic.Int64
	dlFail                         atomic.Int64
	commits, commitFail            atomic.Int64
	writes, writeFail              atomic.Int64
}

// Counters are the consumer's running totals since Run started.
type Counters struct {
	// Consumed counts decided messages: Consumed = Admitted + Late + DeadLettered. A message
	// redelivered after a rebalance or a seek is counted again.
	Consumed, Admitted, Late, DeadLettered int64
	// Effects counts the admitted messages whose [Event.Effect] ran and returned nil (part of
	// Admitted).
	Effects int64
	// DeadLetterFailures counts failed sends and negative delivery reports (each is retried).
	DeadLetterFailures int64
	// Commits counts accepted commit requests, CommitFailures failed ones.
	Commits, CommitFailures int64
	// Writes counts sink writes (state flushes per table and close batches), WriteFailures
	// the failed ones.
	Writes, WriteFailures int64
}

func (c *counters) snapshot() Counters {
	return Counters{
		Consumed: c.consumed.Load(), Admitted: c.admitted.Load(), Late: c.late.Load(), DeadLettered: c.dead.Load(),
		Effects:            c.effects.Load(),
		DeadLetterFailures: c.dlFail.Load(),
		Commits:            c.commits.Load(), CommitFailures: c.commitFail.Load(),
		Writes: c.writes.Load(), WriteFailures: c.writeFail.Load(),
	}
}

func newProcessor[K comparable](s *settings[K], cl client) *processor[K] {
	return &processor[K]{
		s:       s,
		log:     s.Logger,
		cl:      cl,
		tracker: ledger.NewTracker(),
		parts:   make(map[ledger.TopicPartition]*part[K]),
		state:   make(map[string][]sink.StateRow),
		seq:     1,
		inbox:   newInbox(),
		jobDone: make(chan struct{}, 1),
		spawn:   func(f func()) { go f() },
		now:     time.Now,
	}
}

// fail records an invariant that broke; Run stops.
func (p *processor[K]) fail(err error, what string, args ...any) {
	if p.fatal == nil {
		p.fatal = fmt.Errorf("%w: %s: %w", ErrInternal, what, err)
	}
	p.log.Error("consumer: internal error, stopping", append([]any{"during", what, "error", err}, args...)...)
}

// handle decides one message: decode, late test against the partition watermark BEFORE the
// event is applied, apply (or run its effect), add to the ledger, then move the watermark and
// tell the ledger. That order is what makes a replay from any committed offset decide as this
// run did. ctx is cancelled only by Abort: nothing more is decided then.
func (p *processor[K]) handle(ctx context.Context, m *kafka.Message) {
	if p.fatal != nil || p.halt != nil || ctx.Err() != nil || m.TopicPartition.Topic == nil {
		return
	}
	tp := ledger.TopicPartition{Topic: *m.TopicPartition.Topic, Partition: m.TopicPartition.Partition}
	pt := p.parts[tp]
	if pt == nil {
		// A message of a partition given up: its next owner decides it.
		p.log.Debug("message of a partition not owned; dropped", "partition", tp.String(), "offset", int64(m.TopicPartition.Offset))
		return
	}
	off := int64(m.TopicPartition.Offset)
	if off <= pt.led.LastAdded() {
		return // fetched again after a seek: decided already
	}
	if pt.paused != 0 || pt.seekTo >= 0 {
		// A paused partition decides nothing (its close or progress write may be missing);
		// librdkafka drops fetched messages at Pause, and any that still arrive are fetched
		// again, from the first offset not decided.
		if pt.seekTo < 0 {
			pt.seekTo = off
			if pt.next >= 0 {
				pt.seekTo = min(off, pt.next)
			} else if pt.committed >= 0 {
				pt.seekTo = min(off, pt.committed)
			}
			p.log.Debug("message of a paused partition dropped; it is fetched again on resume",
				"partition", tp.String(), "offset", off, "from", pt.seekTo)
		}
		return
	}
	arrival := p.s.Clock()
	p.counters.consumed.Add(1)
	pt.consumed++

	ev, err := pt.handler(m)
	if err == nil {
		err = ev.Validate()
	}
	if err == nil && p.s.Sink == nil && (len(ev.Values) > 0 || len(ev.State) > 0) {
		err = &EventError{Reason: "window values or state rows, and the consumer has no sink"}
	}
	if err != nil {
		p.deadLetter(ctx, pt, m, off, arrival, err)
		return
	}

	var cond ledger.Condition
	info := MessageInfo{TopicPartition: tp, Offset: off, Outcome: Admitted}
	if ev.Effect != nil {
		if !p.effect(ctx, pt, m, off, arrival, ev.Effect) {
			return
		}
		info.Effect = true
	}
	if len(ev.Values) > 0 {
		_, end := window.Bounds(ev.Time, pt.win.Size())
		info.WindowEnd = end
		if pt.wm.IsLate(end) {
			// Late: nothing applied, durable at once.
			if !p.add(pt, off, ledger.Condition{}) {
				return
			}
			pt.wm.Observe(ev.Time, arrival)
			p.setWatermark(pt)
			pt.next = off + 1
			pt.late++
			p.counters.late.Add(1)
			info.Outcome = Late
			p.decided(info)
			if p.s.OnLate != nil {
				p.s.OnLate(m, ev, end)
			}
			return
		}
		for _, v := range ev.Values {
			if err := pt.win.AddKeys(ev.Time, v.Value, v.Keys...); err != nil {
				// Validate and IsLate rule out every error AddKeys returns.
				p.fail(err, "apply to windows", "partition", tp.String(), "offset", off)
				return
			}
		}
		cond = ledger.Window(end)
		ow, ok := pt.open[end.UnixNano()]
		if !ok {
			ow.first = off
		}
		ow.entries++
		pt.open[end.UnixNano()] = ow
		pt.openEntries++
	}
	if len(ev.State) > 0 {
		for _, r := range ev.State {
			p.state[r.Table] = append(p.state[r.Table], r.StateRow)
		}
		p.stateRows += len(ev.State)
		cond = cond.And(ledger.Flush(p.seq))
		info.State = len(ev.State)
	}
	if !p.add(pt, off, cond) {
		return
	}
	if ev.Time.IsZero() {
		pt.wm.Touch(arrival)
	} else {
		pt.wm.Observe(ev.Time, arrival)
	}
	p.setWatermark(pt)
	pt.next = off + 1
	pt.admitted++
	p.counters.admitted.Add(1)
	if info.Effect {
		p.counters.effects.Add(1)
	}
	info.Condition = cond
	p.decided(info)
}

// effect runs an event's effect. It reports whether the message goes on to be admitted (the
// effect committed); otherwise the message was dead-lettered (a rejection), or left undecided
// because Run stops (an infrastructure failure, or Abort).
func (p *processor[K]) effect(ctx context.Context, pt *part[K], m *kafka.Message, off int64, arrival time.Time, run func(context.Context) error) bool {
	ectx, cancel := context.WithTimeout(ctx, p.s.WriteTimeout)
	err := run(ectx)
	cancel()
	if err == nil {
		return true
	}
	var rejected *RejectedError
	if errors.As(err, &rejected) {
		p.deadLetter(ctx, pt, m, off, arrival, err)
		return false
	}
	// Not decided: not counted, not in the ledger, so never committed.
	p.counters.consumed.Add(-1)
	pt.consumed--
	if ctx.Err() != nil {
		return false // aborted: the effect's error is the abort's
	}
	p.halt = fmt.Errorf("%w: %s offset %d: %w", ErrEffect, pt.tp, off, err)
	p.log.Error("effect failed; stopping after committing what is durable, this message excluded",
		"partition", pt.tp.String(), "offset", off, "error", err)
	return false
}

// add records the entry in the partition's ledger.
func (p *processor[K]) add(pt *part[K], off int64, c ledger.Condition) bool {
	if err := pt.led.Add(off, c); err != nil {
		p.fail(err, "ledger add", "partition", pt.tp.String(), "offset", off)
		return false
	}
	if pt.firstAdded < 0 {
		pt.firstAdded = off
	}
	return true
}

// setWatermark tells the ledger the partition's watermark after the entries added so far.
func (p *processor[K]) setWatermark(pt *part[K]) {
	if wm, ok := pt.wm.Watermark(); ok {
		pt.led.SetWatermark(wm)
	}
}

func (p *processor[K]) decided(info MessageInfo) {
	for _, h := range p.s.hooks.message {
		h.OnMessage(info)
	}
	if p.sinceCheck++; p.sinceCheck >= backpressureEvery {
		p.backpressure(false)
	}
}

// deadLetter sends a message that failed to decode to the dead-letter topic. Its entry is
// durable only on a positive delivery report.
func (p *processor[K]) deadLetter(ctx context.Context, pt *part[K], m *kafka.Message, off int64, arrival time.Time, cause error) {
	if p.s.DeadLetters == nil {
		p.counters.consumed.Add(-1)
		pt.consumed--
		p.fatal = fmt.Errorf("%w: %s offset %d: %w", ErrUndecodable, pt.tp, off, cause)
		p.log.Error("message failed to decode and there is no dead-letter topic; stopping",
			"partition", pt.tp.String(), "offset", off, "error", cause)
		return
	}
	if !p.add(pt, off, ledger.Ack()) {
		return
	}
	pt.wm.Touch(arrival)
	pt.next = off + 1
	pt.dead++
	p.counters.dead.Add(1)
	p.decided(MessageInfo{TopicPartition: pt.tp, Offset: off, Outcome: DeadLettered, Condition: ledger.Ack(), Err: cause})
	p.log.Info("message dead-lettered", "partition", pt.tp.String(), "offset", off, "error", cause)
	p.send(ctx, pt, &letter{tp: pt.tp, epoch: pt.epoch, offset: off, rec: dlqkafka.RecordFromMessage(m), cause: cause})
}

// tick is the periodic work, in the order the guarantee needs: flush state, then per
// partition the idle advance, close and write with progress, then commit what became durable.
// The writes run off the loop (see writeJob); the commit here carries what earlier writes,
// dead-letter reports and late messages made durable, and poll commits what this tick's
// writes make durable once they are done. A tick that comes while writes are in flight is
// due: the next poll waits for them, then runs it.
func (p *processor[K]) tick(ctx context.Context, reason CommitReason) {
	if p.fatal != nil || ctx.Err() != nil {
		return
	}
	start := time.Now()
	p.drainReports()
	if p.job != nil {
		p.tickDue = true
		return
	}
	p.tickedAt, p.consumedAt = p.now(), p.counters.consumed.Load()
	if job := p.prepare(p.order, false); job != nil {
		p.launch(ctx, job, false)
		p.collect() // done already when the writes ran here
	}
	if p.fatal != nil {
		return
	}
	p.retrySeeks()
	p.commit(ctx, reason, p.tracker.AppendCommits(p.commitBuf[:0]))
	p.ticks++
	p.backpressure(true)
	p.report(time.Since(start), reason == CommitCaughtUp)
	p.waited = 0
}

// caughtUp is called when a Poll returned nothing: the client has no message at hand. With
// FlushWhenCaughtUp it runs a tick early, so that the last messages of a burst are written
// and committed now rather than at the next FlushInterval. It never waits for writes in
// flight (their completion commits what they cover), and never ticks twice without a message
// decided in between, so a quiet consumer goes back to FlushInterval.
func (p *processor[K]) caughtUp(ctx context.Context) {
	if p.s.FlushWhenCaughtUp <= 0 || p.job != nil || p.tickDue || p.counters.consumed.Load() == p.consumedAt {
		return
	}
	if p.now().Sub(p.tickedAt) < p.s.FlushWhenCaughtUp {
		return
	}
	p.tick(ctx, CommitCaughtUp)
}

func (p *processor[K]) wrote(w WriteInfo) {
	p.counters.writes.Add(1)
	if w.Err != nil {
		p.counters.writeFail.Add(1)
	}
	for _, h := range p.s.hooks.write {
		h.OnWrite(w)
	}
}

// position reports the partition's consume position and high watermark to its watermark, for
// idleness, and computes its lag. The high watermark is the client's cached one (no broker
// call). A paused partition, or one with messages to fetch again, is never caught up.
func (p *processor[K]) position(pt *part[K]) {
	pt.lag = -1
	_, hi, err := p.cl.GetWatermarkOffsets(pt.tp.Topic, pt.tp.Partition)
	if err != nil || hi < 0 {
		pt.wm.SetCaughtUp(false)
		return
	}
	pos := max(pt.next, pt.committed)
	if pt.paused == 0 && pt.seekTo < 0 {
		// librdkafka's position also moves past transaction markers and compacted gaps.
		if got, err := p.cl.Position([]kafka.TopicPartition{pt.ktp}); err == nil && len(got) == 1 && got[0].Offset >= 0 {
			pos = max(pos, int64(got[0].Offset))
		}
	}
	if pos < 0 && hi == 0 {
		pos = 0 // an empty partition
	}
	if pos < 0 {
		pt.wm.SetCaughtUp(false)
		return
	}
	pt.lag = max(hi-pos, 0)
	if p.s.IdleTimeout < 0 || pt.paused != 0 || pt.seekTo >= 0 || pos > hi {
		pt.wm.SetCaughtUp(false)
		return
	}
	if err := pt.wm.SetPosition(pos, hi); err != nil {
		pt.wm.SetCaughtUp(false)
	}
}

// toSink converts closed partials for the sink. Window keys that map to the same sink key in
// one window are merged, in their (deterministic) close order.
func (p *processor[K]) toSink(closed []window.Partial[K]) ([]sink.Partial, error) {
	out := make([]sink.Partial, 0, len(closed))
	type key struct {
		start   int64
		dim, id string
	}
	var (
		index map[key]int
		stats []*window.Stats
	)
	for _, c := range closed {
		sk := p.s.Keys(c.Key)
		k := key{c.Start.UnixNano(), sk.Dimension, sk.DimensionID}
		if i, dup := index[k]; dup {
			merged, err := window.Merge(stats[i], c.Stats)
			if err != nil {
				return nil, err
			}
			stats[i] = merged
			for name, v := range sk.Attrs {
				if _, ok := out[i].Attrs[name]; !ok {
					if out[i].Attrs == nil {
						out[i].Attrs = map[string]string{}
					}
					out[i].Attrs[name] = v
				}
			}
			continue
		}
		if index == nil {
			index = make(map[key]int)
		}
		index[k] = len(out)
		stats = append(stats, c.Stats)
		out = append(out, sink.Partial{
			Key:       sink.Key{WindowStart: c.Start, Dimension: sk.Dimension, DimensionID: sk.DimensionID},
			WindowEnd: c.End,
			Attrs:     sk.Attrs,
		})
	}
	for i := range out {
		b, err := stats[i].MarshalBinary()
		if err != nil {
			return nil, err
		}
		out[i].Stats = b
	}
	return out, nil
}

// commit sends the commits synchronously, with their metadata, and marks the accepted ones.
// A failed commit is logged and left for the next tick: Tracker.Commits reports it again.
func (p *processor[K]) commit(ctx context.Context, reason CommitReason, cs []ledger.Commit) []ledger.Commit {
	if len(cs) == 0 || p.fatal != nil || ctx.Err() != nil {
		return nil
	}
	offsets := make([]kafka.TopicPartition, len(cs))
	for i, c := range cs {
		topic := c.Topic
		offsets[i] = kafka.TopicPartition{Topic: &topic, Partition: c.Partition, Offset: kafka.Offset(c.Offset)}
		if c.Metadata != "" {
			md := c.Metadata
			offsets[i].Metadata = &md
		}
	}
	start := time.Now()
	res, err := p.cl.CommitOffsets(offsets)
	info := CommitInfo{Reason: reason, Commits: cs, Err: err}
	var ok []ledger.Commit
	if err != nil {
		info.Failed = cs
	} else {
		failed := map[ledger.TopicPartition]error{}
		for _, r := range res {
			if r.Error != nil && r.Topic != nil {
				failed[ledger.TopicPartition{Topic: *r.Topic, Partition: r.Partition}] = r.Error
			}
		}
		for _, c := range cs {
			if e, bad := failed[c.TopicPartition]; bad {
				info.Failed = append(info.Failed, c)
				info.Err = cmp.Or(info.Err, e)
				continue
			}
			ok = append(ok, c)
		}
	}
	info.Duration = time.Since(start)
	p.tracker.MarkCommitted(ok...)
	if info.Err != nil {
		p.counters.commitFail.Add(1)
		level := slog.LevelWarn
		if expectedCommitError(info.Err) || reason == CommitRevoke {
			level = slog.LevelInfo
		}
		p.log.Log(ctx, level, "commit failed; retrying at the next tick", "reason", reason.String(),
			"partitions", len(info.Failed), "error", info.Err)
	} else {
		p.counters.commits.Add(1)
		p.log.Debug("committed", "reason", reason.String(), "partitions", len(cs))
	}
	for _, h := range p.s.hooks.commit {
		h.OnCommit(info)
	}
	return ok
}

// expectedCommitError reports the errors a commit meets around a rebalance: the group moved
// on, and the next owner commits from what is durable.
func expectedCommitError(err error) bool {
	var ke kafka.Error
	if !errors.As(err, &ke) {
		return false
	}
	switch ke.Code() {
	case kafka.ErrState, kafka.ErrRebalanceInProgress, kafka.ErrNoOffset, kafka.ErrIllegalGeneration,
		kafka.ErrUnknownMemberID, kafka.ErrAssignmentLost, kafka.ErrStaleMemberEpoch, kafka.ErrFencedInstanceID:
		return true
	}
	return false
}

// assignment is one newly assigned partition with its committed offset and metadata.
type assignment struct {
	tp        ledger.TopicPartition
	committed int64 // -1 if none
	metadata  string
}

// assign restores the partitions: watermark = max(metadata's, closed_through), windows closed
// through it (so that replayed events of written windows are late), a ledger at the committed
// offset that knows closed_through and the watermark.
func (p *processor[K]) assign(ctx context.Context, as []assignment) error {
	var tps []ledger.TopicPartition
	for _, a := range as {
		if p.parts[a.tp] == nil {
			tps = append(tps, a.tp)
		}
	}
	if len(tps) == 0 {
		return nil
	}
	// The sink is never called from two goroutines at once, and a job in flight never
	// writes partitions whose set changed under it.
	p.await(ctx)
	var progress map[ledger.TopicPartition]time.Time
	if p.s.Sink != nil {
		var err error
		if progress, err = p.s.Sink.ClosedThrough(ctx, tps...); err != nil {
			return fmt.Errorf("%w: reading closed_through of %v: %w", ErrAssign, tps, err)
		}
	}
	for _, a := range as {
		if p.parts[a.tp] != nil {
			p.log.Warn("partition assigned twice; keeping its state", "partition", a.tp.String())
			continue
		}
		h := p.s.Topics[a.tp.Topic]
		if h == nil {
			return fmt.Errorf("%w: partition %v of a topic without a handler", ErrAssign, a.tp)
		}
		info := AssignInfo{TopicPartition: a.tp, Committed: a.committed, Metadata: a.metadata}
		var rp watermark.RestorePoint
		if cp, err := ledger.DecodeMetadata(a.metadata); err == nil {
			rp.Metadata, info.MetadataWatermark = cp.Watermark, cp.Watermark
		} else {
			info.MetadataErr = err
			if !errors.Is(err, ledger.ErrNoMetadata) {
				p.log.Warn("commit metadata unreadable; restoring the watermark from closed_through alone",
					"partition", a.tp.String(), "committed", a.committed, "error", err)
			}
		}
		ct, hasCT := progress[a.tp]
		if hasCT {
			rp.ClosedThrough, info.ClosedThrough = ct.UTC(), ct.UTC()
		}
		wm, err := watermark.NewPartition(p.s.wm)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrAssign, err)
		}
		if err := wm.Restore(rp); err != nil {
			return fmt.Errorf("%w: %w", ErrAssign, err)
		}
		win, err := window.New[K](p.s.win)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrAssign, err)
		}
		led, err := p.tracker.Assign(a.tp, a.committed)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrAssign, err)
		}
		if hasCT {
			if err := led.CloseThrough(ct); err != nil {
				return fmt.Errorf("%w: %w", ErrAssign, err)
			}
		}
		if w, ok := wm.Watermark(); ok {
			win.Close(w) // empty: only records how far it is closed
			led.SetWatermark(w)
			info.Watermark = w
		}
		topic := a.tp.Topic
		p.epoch++
		pt := &part[K]{
			tp: a.tp, ktp: kafka.TopicPartition{Topic: &topic, Partition: a.tp.Partition},
			handler: h, epoch: p.epoch,
			led: led, wm: wm, win: win,
			written: ct, hasWritten: hasCT,
			committed: a.committed, next: -1, seekTo: -1, lag: -1, firstAdded: -1,
			open: map[int64]openWindow{},
		}
		p.parts[a.tp] = pt
		p.log.Info("partition assigned", "partition", a.tp.String(), "committed", a.committed,
			"watermark", info.Watermark, "closed_through", info.ClosedThrough, "metadata_watermark", info.MetadataWatermark)
		for _, h := range p.s.hooks.assign {
			h.OnAssign(info)
		}
	}
	p.reorder()
	return nil
}

func (p *processor[K]) reorder() {
	p.order = p.order[:0]
	for _, pt := range p.parts {
		p.order = append(p.order, pt)
	}
	slices.SortFunc(p.order, func(a, b *part[K]) int {
		return cmp.Or(cmp.Compare(a.tp.Topic, b.tp.Topic), cmp.Compare(a.tp.Partition, b.tp.Partition))
	})
}

// revoke gives partitions up. Revoked: state flushed, pending closes written, the durable
// prefix committed, then everything dropped. Lost: dropped without writing or committing, as
// another consumer may own them already.
func (p *processor[K]) revoke(ctx context.Context, tps []ledger.TopicPartition, lost bool, reason CommitReason) {
	var owned []*part[K]
	for _, tp := range tps {
		if pt := p.parts[tp]; pt != nil {
			owned = append(owned, pt)
		}
	}
	if len(owned) == 0 {
		return
	}
	slices.SortFunc(owned, func(a, b *part[K]) int {
		return cmp.Or(cmp.Compare(a.tp.Topic, b.tp.Topic), cmp.Compare(a.tp.Partition, b.tp.Partition))
	})
	if p.fatal == nil {
		p.await(ctx)
	}
	if !lost && p.fatal == nil {
		p.drainReports()
		if job := p.prepare(owned, true); job != nil {
			p.launch(ctx, job, true)
			p.collect()
		}
	}
	var final []ledger.Commit
	dropped := make([]int64, len(owned))
	for i, pt := range owned {
		dropped[i] = pt.led.Pending()
		if lost {
			p.tracker.Drop(pt.tp)
			continue
		}
		c, ok, err := p.tracker.Revoke(pt.tp)
		if err != nil {
			p.fail(err, "ledger revoke", "partition", pt.tp.String())
			continue
		}
		if ok {
			final = append(final, c)
		}
	}
	if !lost {
		p.commit(ctx, reason, final)
	}
	for i, pt := range owned {
		delete(p.parts, pt.tp)
		p.log.Info("partition given up", "partition", pt.tp.String(), "lost", lost, "uncommitted", dropped[i])
		for _, h := range p.s.hooks.revoke {
			h.OnRevoke(RevokeInfo{TopicPartition: pt.tp, Lost: lost, Dropped: dropped[i]})
		}
	}
	p.reorder()
}

// assignedTPs returns the owned partitions, sorted.
func (p *processor[K]) assignedTPs() []ledger.TopicPartition {
	out := make([]ledger.TopicPartition, len(p.order))
	for i, pt := range p.order {
		out[i] = pt.tp
	}
	return out
}

// drainable estimates how many of the partition's uncommitted entries can become committable
// without new data: those before the first entry of a window that is still open (closed
// windows get written, flushes and acks arrive); the ones after it wait for the partition's
// later messages whatever their own condition.
func (pt *part[K]) drainable() int64 {
	pending := pt.led.Pending()
	if len(pt.open) == 0 || pending == 0 {
		return pending
	}
	firstOpen := int64(-1)
	for _, ow := range pt.open {
		if firstOpen < 0 || ow.first < firstOpen {
			firstOpen = ow.first
		}
	}
	base, ok := pt.led.Committable()
	if !ok {
		base = pt.firstAdded
	}
	return min(max(firstOpen-base, 0), pending)
}

// owned returns the owned partitions for the client, sorted.
func (p *processor[K]) owned() []kafka.TopicPartition {
	out := make([]kafka.TopicPartition, len(p.order))
	for i, pt := range p.order {
		out[i] = pt.ktp
	}
	return out
}

func (p *processor[K]) pause(pt *part[K], why uint8) {
	if pt.paused == 0 {
		if err := p.cl.Pause([]kafka.TopicPartition{pt.ktp}); err != nil {
			p.log.Warn("pause failed", "partition", pt.tp.String(), "error", err)
		}
		p.log.Info("partition paused", "partition", pt.tp.String(), "reason", pauseReason(why))
	}
	pt.paused |= why
}

func (p *processor[K]) unpause(pt *part[K], why uint8) {
	if pt.paused&why == 0 {
		return
	}
	pt.paused &^= why
	if pt.paused != 0 {
		return
	}
	if err := p.cl.Resume([]kafka.TopicPartition{pt.ktp}); err != nil {
		p.log.Warn("resume failed; retrying at the next tick", "partition", pt.tp.String(), "error", err)
		pt.paused |= why
		return
	}
	p.log.Info("partition resumed", "partition", pt.tp.String())
	p.seek(pt)
}

// seek fetches the messages dropped while the partition was paused again.
func (p *processor[K]) seek(pt *part[K]) {
	if pt.seekTo < 0 {
		return
	}
	tp := pt.ktp
	tp.Offset = kafka.Offset(pt.seekTo)
	if err := p.cl.Seek(tp, 0); err != nil {
		p.log.Warn("seek failed; the partition decides nothing until it succeeds", "partition", pt.tp.String(),
			"offset", pt.seekTo, "error", err)
		return
	}
	pt.seekTo = -1
}

func (p *processor[K]) retrySeeks() {
	for _, pt := range p.order {
		if pt.paused == 0 && pt.seekTo >= 0 {
			p.seek(pt)
		}
	}
}

func pauseReason(why uint8) string {
	switch why {
	case pauseWrite:
		return "write failed"
	case pausePending:
		return "backpressure: uncommitted messages"
	case pauseKeys:
		return "backpressure: open windows"
	}
	return "several"
}

// report calls the gauge hooks.
func (p *processor[K]) report(d time.Duration, caughtUp bool) {
	if len(p.s.hooks.partition) == 0 && len(p.s.hooks.tick) == 0 {
		return
	}
	ti := TickInfo{Partitions: len(p.order), Duration: d, CaughtUp: caughtUp, Waited: p.waited}
	var (
		activeMin, anyMin           time.Time
		hasActive, hasAny, unknownA bool
	)
	for _, pt := range p.order {
		wm, ok := pt.wm.Watermark()
		pi := PartitionInfo{
			TopicPartition: pt.tp, Lag: pt.lag, Pending: pt.led.Pending(),
			OpenWindows: pt.win.OpenWindows(), OpenKeys: pt.win.OpenKeys(),
			Idle: pt.wm.Idle(), Paused: pt.paused != 0,
			Consumed: pt.consumed, Admitted: pt.admitted, Late: pt.late, DeadLettered: pt.dead,
		}
		if ok {
			pi.Watermark = wm
			if !hasAny || wm.Before(anyMin) {
				anyMin, hasAny = wm, true
			}
		}
		if !pi.Idle {
			switch {
			case !ok:
				unknownA = true
			case !hasActive || wm.Before(activeMin):
				activeMin, hasActive = wm, true
			}
		}
		if pt.hasWritten {
			pi.ClosedThrough = pt.written
		}
		ti.Pending += pi.Pending
		ti.OpenKeys += pi.OpenKeys
		for _, h := range p.s.hooks.partition {
			h.OnPartition(pi)
		}
	}
	switch {
	case unknownA:
	case hasActive:
		ti.MinWatermark = activeMin
	case hasAny:
		ti.MinWatermark = anyMin
	}
	for _, h := range p.s.hooks.tick {
		h.OnTick(ti)
	}
}
