package consumer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/ledger"
)

// ErrLostRecords: records of a partition were deleted (by retention or DeleteRecords) before
// the consumer read them, and [Config.LostRecords] is [LostStop]; or the partition's log ends
// below the consumer's position, so that the records it will hold at those offsets would be
// skipped. The message names the partition and the range. Nothing past the range is
// committed: a restart reports it again until an operator decides.
var ErrLostRecords = errors.New("consumer: records lost before they were read")

// LostPolicy is what the consumer does with a range of offsets whose records were deleted
// before it read them (see [Config.LostRecords]).
type LostPolicy uint8

const (
	// LostStop stops Run with an error wrapping [ErrLostRecords], before anything past the
	// range is decided or committed. It is the default.
	LostStop LostPolicy = iota
	// LostContinue records the range as a dead letter of class [dlq.ClassLost] and goes on
	// from the partition's log start. The committed offset passes the range only once the
	// letter is delivered. It needs [Config.DeadLetters].
	LostContinue
)

func (l LostPolicy) String() string {
	switch l {
	case LostStop:
		return "stop"
	case LostContinue:
		return "continue"
	}
	return fmt.Sprintf("LostPolicy(%d)", uint8(l))
}

// How a lost range was found: LostInfo.Reason, and the Reason of its [dlq.LostError].
const (
	// lostAtAssign: the partition's committed offset was below its log start when it was
	// assigned.
	lostAtAssign = "committed offset below the log start at assignment"
	// lostAtFetch: a fetch found the partition's position below its log start.
	lostAtFetch = "fetch offset out of range"
)

// HookLost is called for each range of offsets whose records were deleted before the consumer
// read them, after it was logged and before the policy applies.
type HookLost interface {
	OnLost(LostInfo)
}

// LostInfo is one lost range of a partition: offsets [From, To), none of which was decided.
type LostInfo struct {
	ledger.TopicPartition
	From, To int64
	// Reason says how the consumer found out: its committed offset was below the log start
	// when it was assigned the partition, or a fetch found its position below the log start.
	Reason string
}

// checkLost refuses a LostRecords that names no policy, or LostContinue without a dead-letter
// topic, where the range would be recorded.
func (s *settings[K]) checkLost() error {
	switch s.LostRecords {
	case LostStop:
	case LostContinue:
		if s.DeadLetters == nil {
			return configError("LostRecords: LostContinue records each lost range as a dead letter, and DeadLetters is nil")
		}
	default:
		return configError("LostRecords: expected LostStop or LostContinue, found %v", s.LostRecords)
	}
	return nil
}

// forceResetError keeps the user's auto.offset.reset in s.reset and gives the client
// auto.offset.reset=error: the consumer resolves the start of a partition without a committed
// offset itself (startOffsets), and a fetch below the log start then surfaces as an
// ErrAutoOffsetReset event (outOfRange) rather than a silent jump.
func (s *settings[K]) forceResetError() error {
	s.reset, _ = resetPolicy(s.kafka)
	if dt, ok := s.kafka["default.topic.config"].(kafka.ConfigMap); ok {
		clean := make(kafka.ConfigMap, len(dt))
		for k, v := range dt {
			if k != "auto.offset.reset" {
				clean[k] = v
			}
		}
		s.kafka["default.topic.config"] = clean
	}
	s.kafka["auto.offset.reset"] = "error"
	return nil
}

// lost reports that offsets [from, to) of pt were deleted before they were decided: an ERROR
// log, the hooks, the counter, then the policy. Under LostContinue the range becomes a ledger
// entry at to-1 that is durable once its dead letter is delivered, so that the committed
// offset never passes the range before the record of it is. A range reported already is not
// reported again. It runs on the loop, at a barrier or before the partition's first message.
func (p *processor[K]) lost(ctx context.Context, pt *part[K], from, to int64, reason string) {
	from = max(from, pt.lostThrough)
	if to <= from {
		return
	}
	pt.lostThrough = to
	p.counters.lost.Add(to - from)
	p.log.Error("records lost before they were read: the log start passed the consumer's position",
		"partition", pt.tp.String(), "topic", pt.tp.Topic, "from", from, "to", to, "records", to-from,
		"reason", reason, "policy", p.s.LostRecords.String())
	info := LostInfo{TopicPartition: pt.tp, From: from, To: to, Reason: reason}
	for _, h := range p.s.hooks.lost {
		h.OnLost(info)
	}
	cause := &dlq.LostError{Topic: pt.tp.Topic, Partition: pt.tp.Partition, From: from, To: to, Reason: reason}
	if p.s.LostRecords == LostStop {
		p.stop.setHalt(fmt.Errorf("%w: %w; LostRecords is LostStop", ErrLostRecords, cause))
		return
	}
	if !p.add(pt, to-1, ledger.Ack()) {
		return
	}
	rec := dlq.Record{Topic: pt.tp.Topic, Partition: pt.tp.Partition, Offset: from}
	p.send(ctx, pt, &letter{tp: pt.tp, epoch: pt.epoch, offset: to - 1, rec: rec, cause: cause})
}

// beyondEnd is the error of a partition whose log ends below the consumer's position: the
// log lost its tail (an unclean leader election) or the topic was made again.
func beyondEnd(tp ledger.TopicPartition, pos, hi int64) error {
	return fmt.Errorf("%w: %s: the log ends at offset %d, below the consumer's position %d (its tail was "+
		"truncated, or the topic made again): records produced at offsets %d to %d would be skipped; move the "+
		"group's offset to go on", ErrLostRecords, tp, hi, pos, hi, pos-1)
}

// lostAtAssign reports the lost ranges of newly assigned partitions, found by startOffsets.
func (p *processor[K]) lostAtAssign(ctx context.Context, as []assignment) {
	for _, a := range as {
		if pt := p.parts[a.tp]; pt != nil && a.logStart > a.committed && a.committed >= 0 {
			p.lost(ctx, pt, a.committed, a.logStart, lostAtAssign)
		}
	}
}

// outOfRange handles an ErrAutoOffsetReset event: a fetch found a partition's offset out of
// its log (the client, with auto.offset.reset=error, stopped fetching it). The event does not
// name the partition, so every owned partition whose next offset to decide is below its log
// start, asked of the broker, loses the range between; under LostContinue it is fetched again
// from the log start (refetch), dropping any records of the range it had fetched and not yet
// decided, so that the reported range is exactly the offsets never decided. A partition whose next
// offset is past its log end stops Run (beyondEnd).
func (c *Consumer[K]) outOfRange(kc *kafka.Consumer, ev kafka.Error) {
	p := c.p
	if p.stop.any.Load() {
		return // stopping: nothing more is decided or committed past the range
	}
	p.barrier()
	ctx, cancel := context.WithTimeout(c.work, c.s.AssignTimeout)
	defer cancel()
	found := false
	var skipped []*part[K]
	for _, pt := range slices.Clone(p.order) {
		next := pt.resumeAt()
		if next < 0 || pt.ended {
			continue
		}
		lo, hi, err := kc.QueryWatermarkOffsets(pt.tp.Topic, pt.tp.Partition, timeoutMs(ctx, 10*time.Second))
		if err != nil {
			p.log.Warn("reading a partition's log start after an out-of-range fetch failed", "partition", pt.tp.String(), "error", err)
			continue
		}
		switch {
		case next > hi:
			found = true
			p.stop.setHalt(beyondEnd(pt.tp, next, hi))
			p.log.Error("the partition's log ends below the consumer's position; stopping", "partition", pt.tp.String(),
				"position", next, "log_end", hi)
		case next < lo:
			found = true
			p.lost(c.work, pt, next, lo, lostAtFetch)
			if p.s.LostRecords == LostContinue {
				pt.nextDispatch = lo // anything below still fetched is dropped (dispatch)
				if pt.seekTo >= 0 {
					pt.seekTo = lo
				}
				skipped = append(skipped, pt)
			}
		}
	}
	if !found {
		// Whichever partition it was stays unfetched until it is assigned again.
		p.log.Warn("out-of-range fetch reported, and no owned partition is below its log start or past its end; "+
			"fetching every partition again from where it stands", "error", ev)
		skipped = slices.Clone(p.order)
	}
	if len(skipped) > 0 && !p.stop.any.Load() {
		c.refetch(kc, skipped)
	}
}

// refetch makes the client fetch pts again from their resume offsets: a partition whose fetch
// answered out of range is stopped in the client (auto.offset.reset=error), where a seek is
// refused, so it is assigned again. An eager assignment is replaced whole, every owned
// partition at its resume offset; a cooperative one gives up and takes back pts alone. A
// failure stops Run: a partition the client does not fetch would stall without a word.
func (c *Consumer[K]) refetch(kc *kafka.Consumer, pts []*part[K]) {
	at := func(pts []*part[K]) []kafka.TopicPartition {
		out := make([]kafka.TopicPartition, len(pts))
		for i, pt := range pts {
			out[i] = pt.ktp
			out[i].Offset = kafka.OffsetStored
			if off := pt.resumeAt(); off >= 0 {
				out[i].Offset = kafka.Offset(off)
			}
		}
		return out
	}
	var err error
	if kc.GetRebalanceProtocol() == "COOPERATIVE" {
		if err = kc.IncrementalUnassign(at(pts)); err == nil {
			err = kc.IncrementalAssign(at(pts))
		}
	} else {
		err = kc.Assign(at(c.p.order))
	}
	if err != nil {
		c.p.stop.setFatal(fmt.Errorf("%w: assigning partitions again after an out-of-range fetch: %w", ErrAssign, err))
		c.s.Logger.Error("assigning partitions again after an out-of-range fetch failed; stopping", "error", err)
	}
}

// resumeAt is the next offset of pt the consumer has not decided: where it fetches again
// after a pause, else after its last dispatched message, else where it started; -1 if
// unknown.
func (pt *part[K]) resumeAt() int64 {
	switch {
	case pt.seekTo >= 0:
		return pt.seekTo
	case pt.nextDispatch >= 0:
		return pt.nextDispatch
	}
	return pt.start
}
