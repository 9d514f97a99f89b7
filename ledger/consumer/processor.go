package consumer

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

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
	pauseBacklog                   // the write backlog passed its share of BufferLimit and no write drops it
	pauseWindows                   // the open windows passed their share of BufferLimit
)

// processor is the consumer's state: every partition's ledger, watermark and windows, the
// buffered state rows and the dead letters in flight.
//
// Two kinds of goroutine share it. The loop (Run's goroutine) polls the client, hands each
// message to its partition's current chunk (dispatch.go), and runs ticks, writes, commits and
// rebalances. The workers decode chunks and decide their messages (decide.go), each
// partition's chunks in offset order. The loop touches a partition's decision state (ledger,
// watermark, windows, buffered rows, counts) only at a barrier, when every dispatched chunk
// has been decided; between barriers that state belongs to whichever worker holds the
// partition. So decisions run on several cores, and every tick, write and commit sees the
// state exactly as of the messages dispatched before it: the outcome is the one a single
// goroutine would reach, whatever the number of workers.
type processor[K comparable] struct {
	s   *settings[K]
	log *slog.Logger
	cl  client

	tracker *ledger.Tracker
	marks   *watermark.Set[ledger.TopicPartition] // every partition's watermark, for the global one
	parts   map[ledger.TopicPartition]*part[K]
	order   []*part[K] // parts sorted by topic and partition: ticks run in a fixed order
	epoch   uint64     // assignments so far

	// seq is the sequence number of the next state flush, from 1. Workers read it while
	// deciding; it changes only at barriers.
	seq        uint64
	stateRetry map[string][]sink.StateRow     // rows of a failed flush, written with the next
	retryBytes map[string]int64               // estimate of stateRetry's memory (rowBytes), by table
	registered map[ledger.TopicPartition]bool // partitions the sink took a batch of
	toRegister []ledger.TopicPartition        // partitions to register with the next close write

	pool       *workers[K]
	last       *part[K]   // partition of the last dispatched message
	open       []*part[K] // partitions with an open chunk
	sinceSeal  int        // messages dispatched since every open chunk was last sealed
	dispatched int64      // messages dispatched so far

	inbox     *inbox
	reportBuf []report
	resends   []*letter
	lettersAt time.Time // when the loop last handled delivery reports outside a tick

	commitBuf      []ledger.Commit
	commitDone     chan struct{} // closed when a commit left behind returns; nil when none
	writesTimedOut int           // rounds of writes in a row that ran out of time
	// stopRequested is closed when Run's context ends: a commit the loop waits for is then
	// left behind at once, so that the shutdown starts without waiting commitTimeout.
	stopRequested   <-chan struct{}
	ticks           uint64    // ticks so far
	tickedAt        time.Time // when the last tick began (now), for FlushWhenCaughtUp
	tickedCount     int64     // dispatched when the last tick began
	windowsPausedAt uint64    // tick of the last pause for open windows
	throttledCount  int64     // dispatched when the open windows were last throttled

	assignedOnce   bool // an assignment came (a bounded run may end)
	endedSinceTick bool // a partition reached its stop since the last tick
	// A bounded run's end of input (Unix ns; see resolveInputEnd), once known since the
	// last change of the assignment, and the partitions this run has owned.
	inputEnd int64
	endKnown bool
	held     map[ledger.TopicPartition]bool

	job     *writeJob[K]     // the writes in flight, if any
	jobDone chan struct{}    // receives when the job's writes are done
	tickDue bool             // a tick came while a job was in flight
	waited  time.Duration    // how long the due tick waited for the job (TickInfo.Waited)
	spawn   func(func())     // starts a job's writes off the loop (tests make it deterministic)
	now     func() time.Time // the wall clock of ticks (tests replace it)

	counters counters
	stop     stopState
	live     liveness
	session  time.Duration // the group's session timeout (session.timeout.ms)
}

// stopState records why Run must stop. Workers and the loop both set it.
type stopState struct {
	mu    sync.Mutex
	fatal error // nothing is committed after it
	halt  error // Run stops after committing what is durable (an effect failed)
	any   atomic.Bool
}

func (s *stopState) setFatal(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fatal == nil {
		s.fatal = err
	}
	s.any.Store(true)
}

func (s *stopState) setHalt(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.halt == nil {
		s.halt = err
	}
	s.any.Store(true)
}

// errs returns the fatal error and the halt, each nil if unset.
func (s *stopState) errs() (fatal, halt error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fatal, s.halt
}

func (p *processor[K]) fatal() error {
	f, _ := p.stop.errs()
	return f
}

func (p *processor[K]) halted() error {
	_, h := p.stop.errs()
	return h
}

// part is the state of one owned partition.
type part[K comparable] struct {
	tp      ledger.TopicPartition
	ktp     kafka.TopicPartition
	handler Handler[K]
	epoch   uint64

	// Owned by the loop.
	paused       uint8     // pause reasons
	seekTo       int64     // where to fetch again after messages were dropped while paused; -1 if none
	start        int64     // where the client started it at assignment, -1 if unknown
	lostThrough  int64     // one past the last offset reported lost, 0 if none
	nextDispatch int64     // offset after the last dispatched message, -1 before the first
	cur          *chunk[K] // the chunk taking this partition's messages, if any
	unwritten    []sink.Partial
	// unwrittenBytes estimates the memory of unwritten (see Config.BufferLimit).
	unwrittenBytes int64
	written        time.Time // closed_through last written (or read at assignment)
	hasWritten     bool
	emptySent      bool  // the sink knows the partition as empty (caught up, no watermark)
	stop           int64 // a bounded run's stop offset, -1 if none
	ended          bool  // every message below stop was dispatched
	ownClosed      bool  // ended, and the end-of-input watermark closed its last open window
	finished       bool  // ownClosed, and the end-of-input watermark reached the input's end
	caughtUp       bool  // position equals the high watermark at the last tick
	committed      int64
	lag            int64

	// Memory estimates of what the partition holds, kept by whoever decides its messages and
	// read by the loop at any time (see Config.BufferLimit).
	winBytes, stateBytes, letterBytes atomic.Int64

	// Chunks dispatched and not yet decided, in offset order; see workers.finish.
	mu       sync.Mutex
	queue    []*chunk[K]
	applying bool

	// Owned by the worker deciding the partition's chunk, or by the loop at a barrier.
	led         *ledger.Partition
	wm          *watermark.Partition
	win         *window.Windows[K]
	open        map[int64]openWindow // admitted entries per open window, by end (Unix ns)
	openEntries int64
	// lastData is the latest end (Unix ns) of a window it admitted an event to in this
	// assignment, 0 if none; holds is the latest of that and its closed_through at the
	// assignment: the sink may hold its partials of windows ending up to there.
	lastData, holds int64
	firstAdded      int64 // first offset added in this assignment, -1 before
	next            int64 // offset after the last decided message, -1 before the first
	inflight        int   // dead letters waiting for a report
	state           stateBuffer

	deadSince map[string]int64 // dead-lettered since the last summary, by error class
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
	lost                           atomic.Int64
}

// Counters are the consumer's running totals since Run started.
type Counters struct {
	// Consumed counts decided messages: Consumed = Admitted + Late + DeadLettered. A message
	// redelivered after a rebalance or a seek is counted again.
	Consumed, Admitted, Late, DeadLettered int64
	// Effects counts the admitted messages whose [Event.Effect] was applied (part of
	// Admitted).
	Effects int64
	// DeadLetterFailures counts failed sends and negative delivery reports (each is retried).
	DeadLetterFailures int64
	// Commits counts accepted commit requests, CommitFailures failed ones.
	Commits, CommitFailures int64
	// Writes counts sink calls (a state flush per table, and the close batches of a tick or a
	// revocation, which go in one call), WriteFailures the failed ones.
	Writes, WriteFailures int64
	// Lost counts the offsets reported lost: their records were deleted before the consumer
	// read them (see [Config.LostRecords]). They are not in Consumed.
	Lost int64
}

func (c *counters) snapshot() Counters {
	return Counters{
		Consumed: c.consumed.Load(), Admitted: c.admitted.Load(), Late: c.late.Load(), DeadLettered: c.dead.Load(),
		Effects:            c.effects.Load(),
		DeadLetterFailures: c.dlFail.Load(),
		Commits:            c.commits.Load(), CommitFailures: c.commitFail.Load(),
		Writes: c.writes.Load(), WriteFailures: c.writeFail.Load(),
		Lost: c.lost.Load(),
	}
}

func newProcessor[K comparable](s *settings[K], cl client) (*processor[K], error) {
	marks := watermark.NewSet[ledger.TopicPartition](s.wm)
	session, err := sessionTimeout(s.kafka)
	if err != nil {
		return nil, err
	}
	return &processor[K]{
		session:    session,
		s:          s,
		log:        s.Logger,
		cl:         cl,
		tracker:    ledger.NewTracker(),
		marks:      marks,
		parts:      make(map[ledger.TopicPartition]*part[K]),
		seq:        1,
		stateRetry: make(map[string][]sink.StateRow),
		retryBytes: make(map[string]int64),
		registered: make(map[ledger.TopicPartition]bool),
		held:       make(map[ledger.TopicPartition]bool),
		inbox:      newInbox(),
		jobDone:    make(chan struct{}, 1),
		spawn:      func(f func()) { go f() },
		now:        time.Now,
	}, nil
}

// fail records an invariant that broke; Run stops and commits nothing more.
func (p *processor[K]) fail(err error, what string, args ...any) {
	p.stop.setFatal(fmt.Errorf("%w: %s: %w", ErrInternal, what, err))
	p.log.Error("consumer: internal error, stopping", append([]any{"during", what, "error", err}, args...)...)
}
