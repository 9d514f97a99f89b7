package consumer

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/internal/kafkaconf"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/watermark"
	"github.com/streamledger/streamledger/window"
)

// defaultEffectBatch is Config.EffectBatch's default, and maxEffectBatch its bound.
const (
	defaultEffectBatch = 256
	maxEffectBatch     = 8192
)

// DefaultBufferLimit is the BufferLimit of a zero [Config.BufferLimit], 256 MiB: the bound a
// process sizes its Go memory limit by.
const DefaultBufferLimit = 256 << 20

// The defaults of the zero durations of [Config].
const (
	defaultFlushInterval   = 5 * time.Second
	defaultWriteTimeout    = 30 * time.Second
	defaultAssignTimeout   = 30 * time.Second
	defaultShutdownTimeout = 30 * time.Second
	// defaultWriteConcurrency serves the shipped sinks: sink/postgres and sink/mysql take
	// concurrent writers, and a close beside a state flush needs two.
	defaultWriteConcurrency = 2
)

// The runtime's fixed timings: each has one sensible value, so none is a Config field.
const (
	// deadLetterBackoff is the first wait before a dead letter whose delivery failed is sent
	// again; it doubles on each failure of the same letter, up to maxDeadLetterBackoff, as a
	// sink.RetryPolicy's waits do (settings.deadLetterRetry). A letter is sent again until it
	// is delivered, as its offset waits for it; the dead-letter producer retries within a send
	// on its own (dlqkafka.Config.Retry).
	deadLetterBackoff = time.Second
	// maxDeadLetterBackoff caps the doubling backoff of a dead letter sent again.
	maxDeadLetterBackoff = 30 * time.Second
	// pollTimeout bounds one Poll of the client: how long the loop waits for a message before
	// it looks at ticks, writes and the buffer bound again.
	pollTimeout = 100 * time.Millisecond
	// commitTimeout bounds the wait for one offset commit (see settings.commitTimeout).
	commitTimeout = 10 * time.Second
	// resumeAt is the low-water mark of the BufferLimit bounds, as a fraction of a bound:
	// paused partitions resume once what they wait for falls to it.
	resumeAt = 0.5
	// closeShare is the least share of ShutdownTimeout, as a divisor, that closing the client
	// gets: the graceful work before it has until the rest has passed.
	closeShare = 4
	// defaultSessionTimeout is librdkafka's session.timeout.ms default.
	defaultSessionTimeout = 45 * time.Second
	// defaultMaxPollInterval is librdkafka's max.poll.interval.ms default.
	defaultMaxPollInterval = 300 * time.Second
	// prefetchShare is the client's share of BufferLimit, as a divisor: a sixteenth. What the
	// client holds in C memory for a prefetched byte is more than the byte (librdkafka's
	// structures, fetch buffers kept alive by their last message), and none of it is in the Go
	// heap the rest of the bound estimates.
	prefetchShare = 16
	// maxPrefetch bounds the client's share of BufferLimit.
	maxPrefetch = 64 << 20
	// fetchesPerPrefetch is how many fetch responses (fetch.max.bytes) the prefetch holds: a
	// response stays in memory until its last message is consumed, so smaller ones turn over
	// sooner and keep less alive beside the queue.
	fetchesPerPrefetch = 8
	// minFetchBytes is the smallest fetch.max.bytes: librdkafka wants it at least
	// max.partition.fetch.bytes, whose default is 1 MiB.
	minFetchBytes = 1 << 20
	// prefetchMessageCost is what the client's share of BufferLimit allows per prefetched
	// message when it sets queued.min.messages: queued.max.messages.kbytes counts payload
	// bytes only, while each queued message also holds librdkafka's own structures and keeps
	// its fetch buffer alive, which for small messages costs more than the payload.
	prefetchMessageCost = 2 << 10
	// minBufferLimit is the smallest BufferLimit.
	minBufferLimit = 64 << 10
	// fetchQueueBackoff is the fetch.queue.backoff.ms the consumer gives librdkafka
	// when the configuration does not set it; see Config.Kafka.
	fetchQueueBackoff = 20 * time.Millisecond
)

// DeadLetterer sends a message that failed to decode to its dead-letter topic.
// *dlqkafka.Producer implements it. When Send returns nil, done must be called exactly once,
// on any goroutine, with nil only on a positive delivery report: the runtime then acks the
// message, and sends it again after a backoff on an error.
type DeadLetterer interface {
	Send(ctx context.Context, rec dlq.Record, cause error, done func(error)) error
}

// Config configures a [Consumer]. Kafka and Topics are required, and Series with a Sink. In
// every field, zero means the default the field states; a negative value is accepted only
// where the field says what it means, and New refuses it anywhere else with an error wrapping
// [ErrConfig] that names the field. [New] validates it in one place.
type Config[K comparable] struct {
	// Kafka is the librdkafka configuration: bootstrap.servers and group.id are required,
	// and auto.offset.reset with a bounded Until; everything else (TLS, SASL, client.id,
	// partition.assignment.strategy, session timeouts...) passes through unchanged.
	//
	// The consumer sets enable.auto.commit=false and enable.auto.offset.store=false, and a
	// configuration that sets either to anything else is rejected rather than overridden:
	// auto-commit commits the consumed position on a timer, whatever has been written, which is
	// exactly what the ledger exists to prevent, and a stored offset would be committed by
	// librdkafka behind the ledger's back (and without the metadata that restores the
	// watermark: librdkafka issue 3927). A user who set them believes something that is not
	// true, so New says so. go.events.channel.enable=true is rejected too: the consumer polls.
	//
	// Unless it is set, fetch.queue.backoff.ms is 20 ms rather than librdkafka's 1 s:
	// librdkafka stops fetching a partition whose local queue holds queued.min.messages, and
	// looks again only after that backoff, so a consumer that drains the queue in less than a
	// second waits for the rest of it with nothing to decide.
	Kafka kafka.ConfigMap

	// Topics maps each source topic to the handler of its messages. Regular expression
	// subscriptions are not supported: every topic needs its handler.
	Topics map[string]Handler[K]

	// Sink receives the closed windows with their progress, the state rows, and tells the
	// progress (closed_through) of a partition when it is assigned. A Sink that is a
	// sink.TableDescriber (sink/postgres, sink/mysql and sinktest.Memory are) sets the
	// windows' exact limit, and the consumer checks state rows and series attributes against
	// its tables before they reach a write (see the package documentation, Sinks). Nil means
	// the handlers return effects only ([Event.Effect]), or nothing: an event with window
	// values or state rows is then dead-lettered as an [EventError].
	Sink sink.Sink

	// ApplyEffects applies a batch of effects ([Event.Effect]): consecutive effect messages
	// of one partition, in offset order, at most EffectBatch of them. It must commit every
	// effect it applies before it returns (for example one database transaction holding an
	// operation marker and the effect of each, as sink/postgres Effects.Apply does), because
	// the messages are durable once it returned: their offsets are committed at the next tick.
	//
	// It returns one [sink.Result] per effect of batch, in batch order, as sink/postgres
	// Effects.Apply does per operation; the Outcome decides the message:
	//   - [sink.Applied] or [sink.Duplicate] (committed by an earlier delivery): admitted;
	//   - [sink.Rejected] or [sink.Conflict]: the message's own fault (an unknown account, an
	//     operation id reused for another operation, a value the database refuses as data),
	//     committed as nothing; the message is dead-lettered with Err as its cause and Err's
	//     class (dlq.ErrorClass), like a decode error;
	//   - no Outcome (the zero one, with an Err saying why) or any other: the effect was not
	//     committed, for a reason that is not the message's; Run stops with an error wrapping
	//     [ErrEffect] before this message is recorded, so neither it nor anything after it in
	//     its partition is committed, and a restart applies it again.
	//
	// A number of results other than len(batch) fails the batch as a whole.
	//
	// A returned error means the batch failed as a whole and nothing of it may be assumed
	// committed (a database that stays unreachable after the retries of a connection lost or a
	// serialization failure): Run stops with an error wrapping [ErrEffect] before the batch's
	// first message is recorded, commits what is durable, and a restart applies the batch
	// again. ctx is cancelled by [Consumer.Abort] and after [Config.WriteTimeout].
	//
	// It runs on the worker that decides the partition: batches of different partitions run
	// concurrently, up to [Config.Workers] at once, so it must be safe for concurrent use, and
	// those of one partition one after another. Nil means the handlers return no effects: an
	// event with an Effect is then dead-lettered as an [EventError].
	ApplyEffects func(ctx context.Context, batch []Effect) ([]sink.Result, error)
	// EffectBatch bounds the effects in one ApplyEffects call: a batch holds the effect
	// messages of one partition that a worker holds at once, up to EffectBatch (see the package
	// documentation, Effects), and a worker holds up to max(256, EffectBatch) messages of a
	// partition. Larger batches take fewer transactions per effect; a slow stream's batches are
	// small whatever the bound. Zero means 256 (the default); negative means one effect per call;
	// more than 8192 is refused.
	EffectBatch int

	// Series maps a window key to the series it feeds in the sink's aggregates table. Two
	// keys of one series are merged into one partial per window. It is called once per
	// closed (window, key), at ticks, from one goroutine at a time. The consumer and the sinks
	// only read the Attrs map it returns, so series with the same attributes may share one
	// map, which saves a map per closed key. Required with a Sink, unused without one.
	Series func(K) sink.Series

	// DeadLetters receives messages that fail to decode or validate. Their offsets become
	// committable only on a positive delivery report; a failed delivery is sent again after a
	// backoff of 1 s that doubles on each failure of the letter up to 30 s, for as long as the
	// partition is owned. Nil means there is no dead-letter topic: a message that fails to
	// decode stops Run with an error wrapping [ErrUndecodable], and its offset is never
	// committed.
	DeadLetters DeadLetterer

	// OnLate, if set, is called for every late event (its window already closed in its
	// partition), after it has been counted, for example to publish it to late.<topic>. It runs
	// on the worker that decides the partition, concurrently for different partitions, and
	// must not block. A late event is durable at once, whatever OnLate does.
	OnLate func(m *kafka.Message, ev Event[K], windowEnd time.Time)

	// RetainKey, if set, is called with a window key the first time it enters an open window
	// of a partition, and the window keeps what it returns (see window.Config.Retain): a
	// handler whose keys are cut from a message's text copies or interns them here, once per
	// (window, key) rather than once per event. Nil keeps keys as the handler made them.
	RetainKey func(K) K

	// WindowSize is the tumbling window length. Zero means 5 min; a negative value is
	// refused.
	WindowSize time.Duration
	// Lateness is the allowed lateness: a partition's watermark trails its maximum event time
	// by this much. Zero means 120 s; negative means none: the watermark is the maximum event
	// time.
	Lateness time.Duration
	// IdleTimeout is how long a partition that is caught up must stay quiet before its
	// watermark follows the wall clock (see the package documentation). Zero means 30 s;
	// negative means partitions never go idle.
	IdleTimeout time.Duration

	// FlushInterval is the period of the tick that flushes state, writes closed windows and
	// commits. Zero means 5 s; negative means no periodic tick: ticks
	// then run when [Consumer.Tick] asks, when the buffer fills (see BufferLimit), at
	// rebalances and at the shutdown, and after FlushWhenCaughtUp only when that is set.
	FlushInterval time.Duration
	// FlushWhenCaughtUp runs a tick early when a Poll returns nothing (the client has no
	// message of any assigned partition at hand), messages were dispatched since the last tick
	// began, that tick began at least FlushWhenCaughtUp ago, and no writes are in flight. It
	// shortens the wait from the last message of a burst to its commit, which is up to
	// FlushInterval otherwise, at the cost of more and smaller writes when messages trickle
	// in: at most one such tick per FlushWhenCaughtUp. The tick is an ordinary one (the
	// guarantees do not depend on when ticks run); TickInfo.CaughtUp marks it. Like
	// FlushInterval, it is wall-clock time, not Clock's. Zero means a fifth of FlushInterval
	// (never when FlushInterval is negative); negative means ticks come every FlushInterval
	// only.
	FlushWhenCaughtUp time.Duration

	// WriteTimeout bounds the sink writes of one tick (the state flush and the close batches of
	// every partition) and of one revocation. What did not succeed in time is retried at the
	// next tick, with twice the deadline of the round that ran out of time, up to a second
	// under half of max.poll.interval.ms: a write larger than the database does in
	// WriteTimeout (a bounded run's last windows, a slow server) then completes instead of
	// being retried at the same size forever. A round that succeeds resets it. It must stay
	// under half of max.poll.interval.ms, which New checks when the Kafka configuration sets
	// it. Zero means 30 s; a negative value is refused.
	WriteTimeout time.Duration
	// SyncWrites makes every tick write, then commit, before polling resumes, so that no
	// message is decided while the sink works. The zero value overlaps a tick's writes with
	// consumption: they run on a goroutine of their own, at most one tick's at a time, while
	// the workers go on deciding messages (which join the next tick's writes); their entries
	// become committable when the writes have returned nil, as with SyncWrites. Rebalances and
	// the shutdown wait for writes in flight, and the sink is never called concurrently by
	// the consumer from two goroutines at once (but see WriteConcurrency). A tick that comes
	// while writes are in flight runs as soon as they are done, with everything decided
	// until then, so that a sink slower than FlushInterval writes back to back in larger
	// rounds. Meanwhile the workers go on deciding while the write backlog stays under half
	// of the BufferLimit budget, and under a quarter once it and the open windows fill the
	// budget; past that (a tick due or not), or with no bound once a tick is due, the loop
	// waits for the writes, deciding nothing, and the consumer runs at most one FlushInterval
	// ahead of the sink.
	SyncWrites bool
	// Workers is how many goroutines decode and decide messages. Decoding runs ahead in
	// parallel, also within one partition; each partition's messages are decided in offset
	// order, and different partitions' in parallel. Ticks, writes, commits and rebalances
	// wait until every message polled before them is decided, so the outcome (sink writes,
	// commits and their metadata) does not depend on the number of workers. A worker waits
	// while ApplyEffects commits its batch, so a consumer of effects gains from more workers
	// than cores: as many batches run at once as there are workers busy with different
	// partitions. Zero means runtime.GOMAXPROCS(0); negative means none: the polling goroutine
	// decides each message itself, and so applies each effect alone.
	Workers int
	// WriteConcurrency is how many of one tick's writes (each state table's flush, and the
	// close batches of every partition in one call) run at once. Above 1 the Sink must be safe
	// for concurrent use, as sink/postgres, sink/mysql and sinktest.Memory are (their writers
	// may run at any concurrency); a Sink that is not must have 1. The outcome is the same, as
	// every write is applied to the ledgers when all are done. The state tables' flushes start
	// largest (by estimated bytes) first; a close call that writes windows commits after them,
	// and waits for the next tick if one failed (see the package documentation). Above 1,
	// with a sink.GatedWindowWriter, it is made beside them (which then run one fewer at a
	// time) and commits once they are done; otherwise it starts then. Zero means 2; a
	// negative value is refused.
	WriteConcurrency int
	// AssignmentWait is how long a subscribed consumer may hold no partition before it logs a
	// warning and [Consumer.Health] reports [HealthNoAssignment]: a group that cannot
	// complete a rebalance otherwise leaves a consumer waiting without a word. Zero means
	// three session timeouts (session.timeout.ms, 45 s unless set); negative means never.
	AssignmentWait time.Duration
	// AssignTimeout bounds reading the committed offsets and the sink's progress of newly
	// assigned partitions. Failing that, Run stops with an error wrapping [ErrAssign]: the
	// consumer cannot know from which watermark to decide. Zero means 30 s; a negative value
	// is refused.
	AssignTimeout time.Duration
	// ShutdownTimeout bounds the whole graceful shutdown after Run's context is cancelled,
	// closing the client included: waiting for dead-letter delivery reports, the last writes
	// and the last commit get until three quarters of it have passed, and closing the client,
	// which can hang (confluent-kafka-go issue 189), gets what remains, at least a quarter of
	// it. So Run returns within ShutdownTimeout of the start of its shutdown. After a fatal
	// error or [Consumer.Abort], closing the client gets a quarter of it. Zero means 30 s; a
	// negative value is refused.
	ShutdownTimeout time.Duration

	// BufferLimit bounds, in bytes, the memory the consumer holds for what it consumed. A
	// sixteenth of it, at most 64 MiB, is the client's prefetch of messages not yet decided:
	// queued.max.messages.kbytes, queued.min.messages at one message per 2 KiB of it (librdkafka
	// counts payload bytes only, and a small message costs the client more than its payload) and
	// fetch.max.bytes at an eighth of it (at least 1 MiB and at least max.partition.fetch.bytes,
	// as librdkafka requires), unless the Kafka configuration sets them. The client's C memory is
	// outside the estimates. The rest is the budget of what was decided: the write backlog (state
	// rows not flushed, closed partials not written, dead letters not confirmed; a write in
	// flight counts twice, for the sink's working copy) and the open windows (counted three
	// times, for the write their close makes). Past a quarter of the budget the backlog is
	// written at once by a tick run early; while writes are in flight the loop goes on deciding
	// until the backlog passes half the budget, or the backlog and the windows together pass all
	// of it, and then waits for them, deciding nothing (the client keeps its prefetch). A backlog
	// that writes leave past a quarter (rows of writes that failed, what was decided while they
	// ran) or that a tick cannot write (dead letters waiting for their delivery reports) pauses
	// every partition until it is back under half of that quarter. Open windows past what the
	// budget leaves beside the backlog pause the partitions holding the most, one tick at a time
	// (a partition's windows close only as its own watermark moves). The sizes are estimates of
	// the Go heap the structures hold; the process needs room beside them for the garbage
	// collector (a Go memory limit of BufferLimit less the memory outside Go, such as the
	// client's C heap, keeps the whole process near it) and the rest of the program. A
	// positive value below 64 KiB is refused. Zero means 256 MiB ([DefaultBufferLimit]);
	// negative means no bound, and librdkafka's prefetch defaults.
	BufferLimit int64

	// Until makes Run bounded, for backfills, batch jobs and tests: each partition is
	// consumed up to its stop offset (see [Until]), from its committed offset or, on a
	// partition without one, from where auto.offset.reset says: earliest, the partition's log
	// start; latest, its end, so that nothing is read; error, Run stops with an error wrapping
	// [ErrAssign]. New refuses a bounded Until when Kafka leaves auto.offset.reset unset.
	//
	// Once every message of a partition below its stop is decided, its remaining windows are
	// closed with an end-of-input watermark that steps, one window a tick, to the end of its
	// last window holding data, and written (a partition's windows one at a time, not all at
	// once). Once every partition it owns got there, each one's watermark goes on to the end
	// of the input: the latest end of a window holding data in any partition of the topics
	// (for the partitions it does not own, their closed_through in the sink). So a window is
	// closed in every owned partition, also where it holds no data, and its merged rows are
	// written. Run returns nil once every partition it owns is written and committed through
	// its stop. A merged row that also waits for a partition it does not own (owned by
	// another member of the group, or by none) stays incomplete until that partition's owner
	// closes past it: Run logs a warning naming the windows and the partitions, and still
	// returns nil, as everything it owns is written.
	//
	// The committed metadata and closed_through of each partition then hold the end-of-input
	// watermark, which never goes back, so a later run of the same group (bounded or not)
	// decides events of the windows ending at or before it as late, also in a partition that
	// had no data there, and admits later ones as usual. The zero value runs until Run's
	// context is cancelled.
	Until Until

	// LostRecords is what the consumer does with records deleted (by retention or
	// DeleteRecords) before it read them: it finds them when a partition's committed offset is
	// below its log start at assignment, and when a fetch finds its position below the log
	// start; gaps between fetched offsets (compacted topics, transaction markers) are not
	// losses. Every lost range is logged at ERROR with its partition and offsets, passed to
	// [HookLost] and counted in [Counters].Lost. Zero means [LostStop] (the default): Run
	// stops with an error wrapping [ErrLostRecords] before anything past the range is decided,
	// so the committed offset stays below it and every start reports it again until an
	// operator decides (moves the group's offset, or restarts with LostContinue). That is the
	// safe default because a consumer that goes on writes windows that lack the lost records
	// as if they were complete, and nothing in them says so. [LostContinue] records the range
	// as a dead letter of class [dlq.ClassLost] and goes on from the log start; it needs
	// DeadLetters. A partition whose log ends below the consumer's position stops Run under
	// either policy.
	//
	// The client gets auto.offset.reset=error so that an out-of-range fetch reaches the
	// consumer; the auto.offset.reset of Kafka decides only where a partition without a
	// committed offset starts (earliest: its log start; latest, or unset: its end; error: Run
	// stops with an error wrapping [ErrAssign]).
	LostRecords LostPolicy

	// Clock gives the arrival time of messages and measures idleness. Nil means time.Now.
	Clock func() time.Time
	// Logger receives the consumer's logs. Nil means slog.Default(). Secrets in Kafka (any
	// property whose name contains "password" or "secret", and the SASL OAUTHBEARER
	// configuration) are never logged.
	Logger *slog.Logger
	// Hooks receive counters, gauges and events; see [Hook].
	Hooks []Hook
}

// settings is a validated Config with its defaults filled in.
type settings[K comparable] struct {
	Config[K]
	kafka  kafka.ConfigMap // what the client gets
	topics []string        // sorted
	wm     watermark.Config
	win    window.Config[K]
	hooks  hooks
	reset  string // the auto.offset.reset of Kafka, lower case; "" if unset
	// workers is the number of worker goroutines; 0 decides on the polling goroutine.
	workers int
	// effectBatch bounds a batch of effects; chunk bounds the messages of a chunk (at least
	// effectBatch) and sealEvery the messages dispatched between two sealings of every chunk.
	effectBatch, chunk, sealEvery int
	// buffer is BufferLimit less the client's prefetch, 0 without a bound.
	buffer int64
	// maxWriteTimeout bounds the deadline of writes retried after running out of time:
	// under half of max.poll.interval.ms, at least WriteTimeout.
	maxWriteTimeout time.Duration
	// agg and states are what the sink declares of its tables, when it is a
	// sink.TableDescriber; nil otherwise.
	agg    *sink.AggregateSpec
	states map[string]sink.StateSpec
	// The fixed timings (pollTimeout, deadLetterBackoff and maxDeadLetterBackoff as
	// deadLetterRetry, whose MaxAttempts bounds nothing, commitTimeout, resumeAt), kept here
	// so that tests can shorten them. commitTimeout bounds the wait for one offset commit:
	// librdkafka waits for the group coordinator without a bound, and the polling goroutine
	// waits for the commit.
	pollTimeout, commitTimeout time.Duration
	deadLetterRetry            sink.RetryPolicy
	resumeAt                   float64
}

// validate checks cfg and fills in its defaults. Every error wraps ErrConfig.
func (cfg Config[K]) validate() (*settings[K], error) {
	s := &settings[K]{Config: cfg, pollTimeout: pollTimeout, commitTimeout: commitTimeout, resumeAt: resumeAt,
		deadLetterRetry: sink.RetryPolicy{InitialBackoff: deadLetterBackoff, MaxBackoff: maxDeadLetterBackoff}}
	if cfg.Kafka == nil {
		return nil, configError("Kafka: a librdkafka configuration with bootstrap.servers and group.id is required")
	}
	km, err := kafkaConfig(cfg.Kafka)
	if err != nil {
		return nil, err
	}
	s.kafka = km
	for _, check := range []func() error{
		s.bufferLimit, s.validateTopics, cfg.Until.validate, func() error { return checkReset(s.kafka, cfg.Until) }, s.forceResetError, s.checkLost, s.durations, s.counts, s.timeouts, s.parts, s.validateHooks,
	} {
		if err := check(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// configError is an error wrapping ErrConfig.
func configError(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
}

// validateTopics checks Topics and Series and sorts the topics.
func (s *settings[K]) validateTopics() error {
	if len(s.Topics) == 0 {
		return configError("Topics: at least one topic with its handler is required")
	}
	for topic, h := range s.Topics {
		switch {
		case topic == "":
			return configError("Topics: empty topic name")
		case strings.HasPrefix(topic, "^"):
			return configError("Topics: %q is a regular expression; name each topic with its handler", topic)
		case h == nil:
			return configError("Topics: topic %q has a nil handler", topic)
		}
		s.topics = append(s.topics, topic)
	}
	slices.Sort(s.topics)
	if s.Sink != nil && s.Series == nil {
		return configError("Series: a mapping from window keys to sink series is required")
	}
	return nil
}

// durations fills in the durations' defaults and refuses negative ones where the field gives
// them no meaning. Lateness and IdleTimeout pass to the watermarks as they are, and WindowSize
// to the windows: those packages fill in the same defaults.
func (s *settings[K]) durations() error {
	for _, d := range []struct {
		name string
		d    *time.Duration
		def  time.Duration
	}{
		{"WindowSize", &s.WindowSize, 0}, // the window package's default
		{"WriteTimeout", &s.WriteTimeout, defaultWriteTimeout},
		{"AssignTimeout", &s.AssignTimeout, defaultAssignTimeout},
		{"ShutdownTimeout", &s.ShutdownTimeout, defaultShutdownTimeout},
	} {
		switch {
		case *d.d < 0:
			return configError("%s: expected a positive duration or zero for the default, found %v", d.name, *d.d)
		case *d.d == 0:
			*d.d = d.def
		}
	}
	switch {
	case s.FlushInterval == 0:
		s.FlushInterval = defaultFlushInterval
	case s.FlushInterval < 0:
		s.FlushInterval = -1
	}
	switch {
	case s.FlushWhenCaughtUp == 0 && s.FlushInterval < 0:
		s.FlushWhenCaughtUp = -1 // no periodic tick to take a fifth of
	case s.FlushWhenCaughtUp == 0:
		s.FlushWhenCaughtUp = s.FlushInterval / 5
	}
	return nil
}

// counts fills in the workers and the write concurrency.
func (s *settings[K]) counts() error {
	switch {
	case s.Workers == 0:
		s.workers = runtime.GOMAXPROCS(0)
	case s.Workers > 0:
		s.workers = s.Workers
	}
	if err := s.effectBounds(); err != nil {
		return err
	}
	switch {
	case s.WriteConcurrency < 0:
		return configError("WriteConcurrency: expected a positive number of writes, or zero for 2, found %d", s.WriteConcurrency)
	case s.WriteConcurrency == 0:
		s.WriteConcurrency = defaultWriteConcurrency
	}
	return nil
}

// timeouts derives AssignmentWait from the session timeout and checks WriteTimeout against
// max.poll.interval.ms.
func (s *settings[K]) timeouts() error {
	if s.AssignmentWait == 0 {
		session, err := sessionTimeout(s.kafka)
		if err != nil {
			return err
		}
		s.AssignmentWait = 3 * session
	}
	mpi, ok, err := configMillis(s.kafka, "max.poll.interval.ms")
	if err != nil {
		return err
	}
	if ok && 2*s.WriteTimeout >= mpi {
		return configError("WriteTimeout %v must be under half of max.poll.interval.ms (%v): a tick's writes "+
			"and a revocation's run between two polls", s.WriteTimeout, mpi)
	}
	if !ok {
		mpi = defaultMaxPollInterval
	}
	s.maxWriteTimeout = max(s.WriteTimeout, mpi/2-time.Second)
	return nil
}

// parts makes the configurations of each partition's watermark and windows.
func (s *settings[K]) parts() error {
	if s.Clock == nil {
		s.Clock = time.Now
	}
	if s.Logger == nil {
		s.Logger = slog.Default()
	}
	s.wm = watermark.Config{Lateness: s.Lateness, IdleTimeout: s.IdleTimeout, Clock: s.Clock}
	s.win = window.Config[K]{Size: s.WindowSize, Retain: s.RetainKey}
	if t, ok := s.Sink.(sink.TableDescriber); ok {
		agg, states := t.Tables()
		s.agg, s.states = &agg, make(map[string]sink.StateSpec, len(states))
		for _, st := range states {
			s.states[st.Table] = st
		}
		s.win.ExactLimit = agg.ExactLimit
	}
	if _, err := window.New[K](s.win); err != nil {
		return configError("WindowSize: %v", err)
	}
	return nil
}

// validateHooks refuses a hook that implements none of the Hook interfaces.
func (s *settings[K]) validateHooks() error {
	for i, h := range s.Hooks {
		if !newHooks([]Hook{h}).any() {
			return configError("Hooks[%d]: %T implements none of the Hook interfaces", i, h)
		}
	}
	s.hooks = newHooks(s.Hooks)
	return nil
}

// effectBounds checks EffectBatch and sets the batch and chunk sizes.
func (s *settings[K]) effectBounds() error {
	switch {
	case s.EffectBatch > maxEffectBatch:
		return configError("EffectBatch: expected at most %d, found %d", maxEffectBatch, s.EffectBatch)
	case s.EffectBatch < 0:
		s.effectBatch = 1
	case s.EffectBatch == 0:
		s.effectBatch = defaultEffectBatch
	default:
		s.effectBatch = s.EffectBatch
	}
	s.chunk = max(chunkSize, s.effectBatch)
	s.sealEvery = max(sealEvery, s.chunk)
	return nil
}

// kafkaConfig returns a copy of user with the properties the consumer forces and its defaults,
// or an error naming a property that contradicts them or a required one that is missing.
func kafkaConfig(user kafka.ConfigMap) (kafka.ConfigMap, error) {
	forced := kafka.ConfigMap{"enable.auto.commit": false, "enable.auto.offset.store": false, "go.events.channel.enable": false}
	defaults := kafka.ConfigMap{"fetch.queue.backoff.ms": int(fetchQueueBackoff / time.Millisecond)}
	out, err := kafkaconf.Apply(user, forced, defaults)
	if err != nil {
		return nil, fmt.Errorf("%w: %w: the consumer commits only what the ledger says is durable, with the "+
			"watermark in the commit metadata, and polls", ErrConfig, err)
	}
	if s, _ := user["group.id"].(string); s == "" {
		return nil, fmt.Errorf("%w: Kafka: group.id is required (a non-empty string), found %v", ErrConfig, user["group.id"])
	}
	_, b1 := user["bootstrap.servers"]
	_, b2 := user["metadata.broker.list"]
	if !b1 && !b2 {
		return nil, fmt.Errorf("%w: Kafka: bootstrap.servers is required", ErrConfig)
	}
	return out, nil
}

// configMillis reads a librdkafka property in milliseconds, if set.
func configMillis(m kafka.ConfigMap, key string) (time.Duration, bool, error) {
	n, ok, err := configInt(m, key, "milliseconds")
	return time.Duration(n) * time.Millisecond, ok, err
}

// configInt reads a librdkafka property holding an integer (what says what it counts), if
// set.
func configInt(m kafka.ConfigMap, key, what string) (int64, bool, error) {
	v, ok := m[key]
	if !ok {
		return 0, false, nil
	}
	switch v := v.(type) {
	case int:
		return int64(v), true, nil
	case int32:
		return int64(v), true, nil
	case int64:
		return v, true, nil
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, false, fmt.Errorf("%w: Kafka: %s: expected %s, found %q", ErrConfig, key, what, v)
		}
		return n, true, nil
	}
	return 0, false, fmt.Errorf("%w: Kafka: %s: expected %s, found %T", ErrConfig, key, what, v)
}

// secret reports whether a librdkafka property holds a secret that must never be logged.
func secret(key string) bool {
	k := strings.ToLower(key)
	return strings.Contains(k, "password") || strings.Contains(k, "secret") ||
		strings.Contains(k, "sasl.oauthbearer.config") || strings.Contains(k, "ssl.key.pem") ||
		strings.Contains(k, "jaas") || strings.Contains(k, "token")
}

// redacted returns the configuration as log attributes, sorted, with secrets replaced.
func redacted(m kafka.ConfigMap) slog.Attr {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	attrs := make([]any, 0, len(keys))
	for _, k := range keys {
		if secret(k) {
			attrs = append(attrs, slog.String(k, "[redacted]"))
			continue
		}
		attrs = append(attrs, slog.String(k, fmt.Sprint(m[k])))
	}
	return slog.Group("kafka", attrs...)
}

// bufferLimit fills in BufferLimit's default, sets the client's prefetch to its share unless
// the Kafka configuration sets it, and keeps the rest as the budget of what was decided.
func (s *settings[K]) bufferLimit() error {
	if s.BufferLimit == 0 {
		s.BufferLimit = DefaultBufferLimit
	}
	if s.BufferLimit < 0 {
		return nil
	}
	if s.BufferLimit < minBufferLimit {
		return fmt.Errorf("%w: BufferLimit: expected at least %d bytes, or a negative value for no bound, found %d",
			ErrConfig, minBufferLimit, s.BufferLimit)
	}
	prefetch := min(s.BufferLimit/prefetchShare, maxPrefetch)
	if _, ok := s.kafka["queued.max.messages.kbytes"]; !ok {
		s.kafka["queued.max.messages.kbytes"] = int(max(prefetch>>10, 1))
	}
	if _, ok := s.kafka["queued.min.messages"]; !ok {
		s.kafka["queued.min.messages"] = int(max(prefetch/prefetchMessageCost, 1))
	}
	if _, ok := s.kafka["fetch.max.bytes"]; !ok {
		partition, _, err := configInt(s.kafka, "max.partition.fetch.bytes", "bytes")
		if err != nil {
			return err
		}
		s.kafka["fetch.max.bytes"] = int(max(prefetch/fetchesPerPrefetch, minFetchBytes, partition))
	}
	s.buffer = s.BufferLimit - prefetch
	return nil
}
