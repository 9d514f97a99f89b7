package consumer

import (
	"time"

	"github.com/streamledger/streamledger/ledger"
)

// Hook is a value that implements one or more of the Hook* interfaces of this package; the
// consumer finds them by type assertion, so a metrics adapter implements only what it exports
// and the package imports no metrics library.
//
// Hooks run in the order they were configured and must not block. [HookMessage] runs on the
// workers that decide messages: concurrently for different partitions, in offset order within
// one, so it must be safe for concurrent use. Every other hook runs on the polling goroutine.
// The values passed are the hook's to keep, except slices, which are valid only during the
// call.
type Hook any

// HookMessage is called for every message the consumer decided: once per delivery, so a
// redelivered message is reported again. consumed = admitted + late + dead-lettered. It is
// called concurrently for messages of different partitions.
type HookMessage interface {
	OnMessage(MessageInfo)
}

// HookDeadLetter is called with the delivery report of each dead letter sent.
type HookDeadLetter interface {
	OnDeadLetter(DeadLetterInfo)
}

// HookWrite is called after each sink write: a state flush, or once per partition for the
// close batches of one call (they share its Duration and Err).
type HookWrite interface {
	OnWrite(WriteInfo)
}

// HookCommit is called after each offset commit the consumer attempted, successful or not.
type HookCommit interface {
	OnCommit(CommitInfo)
}

// HookAssign is called when a partition has been assigned and its watermark restored, before
// any of its messages is decided.
type HookAssign interface {
	OnAssign(AssignInfo)
}

// HookRevoke is called when a partition is given up, after its final commit (if any).
type HookRevoke interface {
	OnRevoke(RevokeInfo)
}

// HookPartition is called at every tick for every assigned partition, with its gauges.
type HookPartition interface {
	OnPartition(PartitionInfo)
}

// HookTick is called at the end of every tick with the consumer's totals.
type HookTick interface {
	OnTick(TickInfo)
}

// Decision is what the consumer decided for one message.
type Decision uint8

const (
	// Admitted: the event was applied (to its window, its state rows, its effect, or nothing at
	// all).
	Admitted Decision = iota + 1
	// Late: its window had closed in its partition; nothing was applied.
	Late
	// DeadLettered: it failed to decode or validate, or its effect refused it, and it was sent to
	// the dead-letter topic.
	DeadLettered
)

func (o Decision) String() string {
	switch o {
	case Admitted:
		return "admitted"
	case Late:
		return "late"
	case DeadLettered:
		return "dead-lettered"
	}
	return "unknown"
}

// MessageInfo describes one decided message.
type MessageInfo struct {
	ledger.TopicPartition
	Offset   int64
	Decision Decision
	// WindowEnd is the end of the event's window (admitted or late), zero without one.
	WindowEnd time.Time
	// State is the number of state rows the event buffered (admitted events only).
	State int
	// Effect is set when the event's [Event.Effect] was applied: its batch committed it, and
	// the entry is durable at once (the zero Condition).
	Effect bool
	// Condition is what makes the entry durable in the ledger.
	Condition ledger.Condition
	// Err is the decode or validation error of a dead letter, or the Err of its effect's
	// rejected or conflicting [sink.Result].
	Err error
}

// DeadLetterInfo is the outcome of one dead letter's delivery.
type DeadLetterInfo struct {
	ledger.TopicPartition
	Offset int64
	// Err is nil on a positive delivery report: the entry is acked. Otherwise the letter is sent
	// again after a backoff.
	Err error
	// Attempt counts the sends of this letter, from 1.
	Attempt int
}

// WriteKind tells a state flush from a close batch.
type WriteKind uint8

const (
	// WriteState is a flush of buffered state rows (one table per write).
	WriteState WriteKind = iota + 1
	// WriteClose is a partition's close batch: its closed partials and its closed_through.
	WriteClose
)

func (k WriteKind) String() string {
	switch k {
	case WriteState:
		return "state"
	case WriteClose:
		return "close"
	}
	return "unknown"
}

// WriteInfo describes one sink write.
type WriteInfo struct {
	Kind WriteKind
	// Source is the partition of a close batch.
	Source ledger.TopicPartition
	// Table is the state table of a state flush.
	Table string
	// Rows counts the state rows or the partials written.
	Rows int
	// ClosedThrough is the progress a close batch carries.
	ClosedThrough time.Time
	// Revoke is set on the writes made while partitions are given up (a revocation or the
	// shutdown), before their final commit.
	Revoke   bool
	Duration time.Duration
	Err      error
}

// CommitReason tells why a commit happened.
type CommitReason uint8

const (
	// CommitTick is the periodic commit.
	CommitTick CommitReason = iota + 1
	// CommitRevoke is the final commit of revoked partitions.
	CommitRevoke
	// CommitShutdown is the last commit of a graceful shutdown.
	CommitShutdown
	// CommitCaughtUp is the commit of a tick run early because the consumer had caught up
	// (Config.FlushWhenCaughtUp), or because a partition reached its stop (Config.Until).
	CommitCaughtUp
	// CommitBuffer is the commit of a tick run early because the write backlog passed its
	// share of Config.BufferLimit.
	CommitBuffer
)

func (r CommitReason) String() string {
	switch r {
	case CommitTick:
		return "tick"
	case CommitRevoke:
		return "revoke"
	case CommitShutdown:
		return "shutdown"
	case CommitCaughtUp:
		return "caught-up"
	case CommitBuffer:
		return "buffer"
	}
	return "unknown"
}

// CommitInfo describes one commit attempt.
type CommitInfo struct {
	Reason CommitReason
	// Commits are the offsets sent, with their metadata.
	Commits []ledger.Commit
	// Failed are the commits that were not accepted (all of them when Err is set).
	Failed   []ledger.Commit
	Err      error
	Duration time.Duration
}

// AssignInfo describes a partition's restore when it is assigned.
type AssignInfo struct {
	ledger.TopicPartition
	// Committed is the committed offset consumption resumes from, -1 for none.
	Committed int64
	// Metadata is the committed metadata string; MetadataErr why it was not used (nil when it
	// was, ledger.ErrNoMetadata when there was none, a ledger.ErrBadMetadata when garbled).
	Metadata    string
	MetadataErr error
	// MetadataWatermark is the watermark the metadata held, zero if none.
	MetadataWatermark time.Time
	// ClosedThrough is the sink's progress for the partition, zero if none.
	ClosedThrough time.Time
	// Watermark is the restored watermark, zero if unknown (a fresh partition).
	Watermark time.Time
}

// RevokeInfo describes a partition given up.
type RevokeInfo struct {
	ledger.TopicPartition
	// Lost is set when the assignment was lost (nothing was written or committed).
	Lost bool
	// Dropped counts the uncommitted messages dropped; the next owner replays them.
	Dropped int64
}

// PartitionInfo holds one partition's gauges at a tick.
type PartitionInfo struct {
	ledger.TopicPartition
	// Watermark is wm(P), zero while unknown.
	Watermark time.Time
	// ClosedThrough is the progress last written to the sink, zero if none.
	ClosedThrough time.Time
	// Lag is the high watermark minus the position; -1 while unknown.
	Lag int64
	// Pending is the number of uncommitted messages in the partition's ledger.
	Pending     int64
	OpenWindows int
	OpenKeys    int
	Idle        bool
	Paused      bool
}

// TickInfo holds the consumer's totals at the end of a tick.
type TickInfo struct {
	Partitions int
	// Pending is the number of uncommitted messages over all ledgers (exported as
	// processor_uncommitted_messages by package prom).
	Pending  int64
	OpenKeys int
	// MinWatermark is the global watermark over the active partitions (readiness only),
	// zero if unknown.
	MinWatermark time.Time
	Duration     time.Duration
	// CaughtUp is set on a tick run early because the consumer had caught up
	// (Config.FlushWhenCaughtUp).
	CaughtUp bool
	// Unassigned is how long the consumer has held no partition; zero while it holds some.
	// SinceAssignment is the time since its assignment last changed.
	Unassigned, SinceAssignment time.Duration
	// Waited is how long the loop waited, deciding nothing, for writes in flight since the
	// previous tick: the write backlog had passed a quarter of the buffer budget, or there
	// was no bound and this tick came while they ran (see Config.SyncWrites). Where ticks
	// wait long, the sink holds the loop back, not the client or the handlers.
	Waited time.Duration
	// WindowBytes and BacklogBytes are the estimates Config.BufferLimit bounds, after the
	// tick: the memory of the open windows, and of the write backlog (state rows not
	// flushed, closed partials not written, dead letters not confirmed).
	WindowBytes, BacklogBytes int64
}

// hooks holds the configured hooks split by interface.
type hooks struct {
	message    []HookMessage
	deadLetter []HookDeadLetter
	write      []HookWrite
	commit     []HookCommit
	assign     []HookAssign
	revoke     []HookRevoke
	partition  []HookPartition
	tick       []HookTick
	lost       []HookLost
}

func newHooks(hs []Hook) hooks {
	var h hooks
	for _, x := range hs {
		if v, ok := x.(HookMessage); ok {
			h.message = append(h.message, v)
		}
		if v, ok := x.(HookDeadLetter); ok {
			h.deadLetter = append(h.deadLetter, v)
		}
		if v, ok := x.(HookWrite); ok {
			h.write = append(h.write, v)
		}
		if v, ok := x.(HookCommit); ok {
			h.commit = append(h.commit, v)
		}
		if v, ok := x.(HookAssign); ok {
			h.assign = append(h.assign, v)
		}
		if v, ok := x.(HookRevoke); ok {
			h.revoke = append(h.revoke, v)
		}
		if v, ok := x.(HookPartition); ok {
			h.partition = append(h.partition, v)
		}
		if v, ok := x.(HookTick); ok {
			h.tick = append(h.tick, v)
		}
		if v, ok := x.(HookLost); ok {
			h.lost = append(h.lost, v)
		}
	}
	return h
}

func (h hooks) any() bool {
	return len(h.message)+len(h.deadLetter)+len(h.write)+len(h.commit)+len(h.assign)+len(h.revoke)+
		len(h.partition)+len(h.tick)+len(h.lost) > 0
}
