// Package consumer is a Kafka consumer runtime that commits through the ledger. It consumes
// with confluent-kafka-go, aggregates events into per-partition tumbling windows, writes
// closed windows and last-write-wins state through a [sink.Sink], applies effects in batches
// ([Event.Effect], [Config.ApplyEffects]), and commits an offset only once every message
// below it is durable. A
// user supplies decoding and what an event does (a [Handler] per topic); the runtime owns
// the order of operations that makes the guarantee hold.
//
// # Guarantees
//
// Within the sink's database, and while progress and commit metadata are retained:
//
//   - no offset is committed before every message below it is durable: its window written
//     with the partition's progress, the state flush that covers it written, its effect
//     committed, its dead letter confirmed by a positive delivery report, or counted as late;
//   - every decided message is accounted for exactly once per delivery: admitted, late or
//     dead-lettered ([Counters]: Consumed = Admitted + Late + DeadLettered);
//   - a partition replayed from its committed offset, by this or any other instance, decides
//     every message as the first run did, or (for windows already written) as late, so that
//     a stored window is never rebuilt from a fragment and never misses an admitted event;
//   - the outcome (sink writes, commits and their metadata) does not depend on the number of
//     workers ([Config.Workers]);
//   - an offset the consumer never decided because its record was deleted first (retention,
//     DeleteRecords) is never skipped in silence: see Lost records.
//
// # Per message
//
// The polling goroutine only polls and hands each message to its partition's current chunk
// of consecutive offsets. Workers decode chunks ([Handler]; an error, or an [Event] that
// [Event.Validate] rejects, sends the message to the dead-letter topic), several at once, also
// of one partition, and decide each partition's messages in offset order, different
// partitions in parallel. Deciding a message means: if the event has an effect, take what
// ApplyEffects said of it when it applied its batch (see Effects); if it has window values,
// decide whether it is late against the partition's watermark BEFORE applying it (late:
// counted, handed to [Config.OnLate], durable at once, nothing applied); apply it to its
// window and buffer its state rows (each replacing an older buffered row of its key: a flush
// writes a key's latest row); add it to the partition's ledger with the condition that
// makes it durable (ledger.Window, ledger.Flush, ledger.Ack for a dead letter, nothing for an
// effect or an event that does nothing); then observe its event time in the partition
// watermark and report the new watermark to the ledger. The ledger thus knows the watermark
// as of every offset it may commit at, and the commit metadata restores it.
//
// # Effects
//
// A message whose effect is not naturally idempotent (a balance credit, a payment record) is
// an [Event] with an Effect and nothing else. The worker that decides a partition hands the
// effects of the messages it holds, in offset order, to [Config.ApplyEffects] in batches of at
// most [Config.EffectBatch], before any of those messages enters the ledger. ApplyEffects
// commits each batch (package sink/postgres, Effects.Apply: one transaction in which each
// operation's marker and its effect are written together). Then the messages are decided in
// offset order, each effect's entry is durable at once (the zero ledger.Condition), and the
// offsets are committed at the next tick.
//
// A batch is what the worker holds of one partition: the messages the polling goroutine
// gathered for it until the chunk was full, a Poll found nothing at hand, the polling of
// other partitions sealed every chunk, or a tick did. So a busy partition's batches are full
// and a slow one's are small and wait for nothing. Batches of different partitions run
// concurrently, one per worker ([Config.Workers]), on as many database connections, which lets
// the database commit them together; batches of one partition run one after another, so the
// effects of a key apply in offset order.
//
// Where a crash can strike, per operation and per batch:
//
//	before the batch's transaction    nothing written         redelivered, applied
//	inside it, before its commit      rolled back             redelivered, applied
//	after its commit, before          effects and markers     redelivered: each effect finds
//	ApplyEffects returned             durable                 its marker and does nothing
//	after the messages are decided,   effects and markers     the same
//	before the offset commit          durable
//	after both                        effects and markers     not redelivered
//	                                  durable
//
// So each effect happens once within its database and while its markers are retained,
// because its batch commits before any offset past it, and a redelivery finds the marker.
// ApplyEffects returns one [sink.Result] per effect, as sink/postgres Effects.Apply does per
// operation. A [sink.Rejected] or [sink.Conflict] result refuses the message as its own fault:
// the message is dead-lettered, with the class of the result's Err, and is durable on the
// positive delivery report, as a decode error is; the rest of its batch is admitted. A batch
// that fails as a whole (ApplyEffects returns an error: the database stayed unreachable, a
// serialization failure outlasted the retries) is the infrastructure's: none of its messages
// is recorded, Run shuts down gracefully (committing what is durable, never the batch or
// anything after it in its partition) and returns an error wrapping [ErrEffect], and a
// restart applies the batch again, whole. A result with no Outcome (an Err only: the effect
// was not committed, and not by the message's fault) stops Run the same way, before that
// message. An effect has no event-time window, so the late test does not apply to it.
// Without a [Config.Sink] a consumer takes effects only.
//
// # Per tick
//
// Every [Config.FlushInterval] (5 s), and with [Config.FlushWhenCaughtUp] also as soon as a
// Poll finds nothing to deliver after new messages were dispatched (the end of a burst, so
// that it is committed without waiting for the next interval), a tick waits until every
// message polled before it is decided, then: flush the buffered state rows (on success every
// ledger learns the flush is durable); per partition, report its position and high watermark
// (the client's cached one; position is the offset after the last decided message) so that
// an idle partition's watermark follows the wall clock, and close the windows the watermark
// passed; write every partition's [sink.CloseBatch] (the partials and ClosedThrough = the
// watermark, with no partials when only the progress moved) in ONE call, which the sink
// applies atomically. On success the ledgers learn closed_through. Then commit,
// synchronously, the offsets that moved, with their metadata (CommitOffsets: librdkafka's
// StoreOffsets drops metadata, issue 3927). A failed commit is logged and retried at the
// next tick.
//
// The windows are closed and serialized at the tick, but the writes run on a goroutine of
// their own while the workers go on deciding messages (unless [Config.SyncWrites]): at most
// one tick's writes are in flight, and messages decided meanwhile join the next tick's. A tick
// that comes meanwhile is due: it runs as soon as the writes are done, and the loop goes on
// deciding until then while the write backlog stays under half of the [Config.BufferLimit]
// budget, and under a quarter once it and the open windows fill the budget; past that (a tick
// due or not), or without a bound, the loop waits for the writes (deciding nothing), so that
// the consumer runs at most one tick ahead of the sink. The ledgers learn a write's outcome
// once all of the tick's writes returned, and only then are its entries committable, with a
// commit right away. Rebalances and the shutdown wait for writes in flight.
//
// A close that writes windows commits after the tick's state flushes succeeded, never before
// them: once a window is written, a replay takes its messages as late and does not buffer
// their state rows again, so a close committed before a flush that then failed (a crash
// between the two) would lose those rows. A sink that implements [sink.GatedWindowWriter]
// (sink/postgres and sink/mysql do) makes the close beside the flushes when WriteConcurrency
// allows, and its commit waits for them; with any other sink the close starts once they are
// done. After a failed flush the closes wait, with their partitions paused, for the next tick.
//
// A failed close write keeps its partials, merged with later closes, and holds every offset
// behind them. Its partitions are paused and decide no further message until a write
// succeeds; any of their messages already fetched are dropped and fetched again from the
// first of them. A decision never becomes durable on a watermark the restart would not
// restore: a message decided on an idle advance whose write is still in flight (or failed)
// is committed only with that watermark in its commit's metadata, and never before the
// entries of the windows the advance closed, which wait for their write. So a replay
// decides as this run did.
//
// # Merged rows and registration
//
// The sink writes a merged row once every partition that may feed it has closed past its
// window (see package sink). So that it knows them all, the consumer registers, when it is
// assigned partitions, every partition of their topics (from the client's metadata) with a
// batch that carries no watermark; a registration that fails is retried with the next close
// write. A partition that is caught up without a watermark (it holds no message with an
// event time) is reported once as empty ([sink.CloseBatch.Empty]), so that it holds back no
// merged row.
//
// # Sinks
//
// [Config.Sink] is any [sink.Sink]; sink/postgres and sink/mysql are the shipped ones, and
// a sink of one's own is proven with sinktest.Run (see package sink, Writing a sink). Two
// optional interfaces, found by type assertion, let the consumer do more with it:
//
//   - a [sink.GatedWindowWriter] lets a tick's close be made beside its state flushes and
//     committed after them (see Per tick), the gate waiting for the flushes;
//   - a [sink.TableDescriber] tells the tables the sink writes. The consumer then builds its
//     windows with the aggregate spec's exact limit, the limit with which the sink decodes
//     the partials; dead-letters as an [EventError] an event whose state rows name a table
//     the sink does not declare or do not match its columns in number; and Run stops with an
//     error wrapping [ErrConfig] when [Config.Series] gives a key an attribute the aggregate
//     spec does not declare. Without it those mistakes fail the writes, which are retried at
//     every tick and hold every offset behind them.
//
// # Configuration
//
// [Config] holds everything, with documented zero values, and [New] validates it in one
// place. The Kafka configuration passes through unchanged (TLS, SASL, client.id, assignor,
// timeouts), except that enable.auto.commit and enable.auto.offset.store are forced to false:
// a value that contradicts them is an error, not silently overridden. Secrets are never
// logged.
//
// # Lost records
//
// Records can be deleted before the consumer reads them: retention or DeleteRecords moves a
// partition's log start past its committed offset while the group is stopped or behind. The
// consumer finds such a range exactly in two places: at assignment, where it reads each
// partition's log start and end beside its committed offset, and at a fetch that answers
// out of range, for which the client is given auto.offset.reset=error (the configured policy
// then only decides where a partition without a committed offset starts, which the consumer
// resolves itself). Gaps between the offsets of fetched batches (compacted topics,
// transaction markers) are not losses and are never reported. A lost range [from, to) of a
// partition is logged at ERROR with the topic, partition and range, passed to [HookLost],
// counted ([Counters].Lost, processor_lost_offsets_total in package prom), and then
// [Config.LostRecords] applies: [LostStop], the default, stops Run with an error wrapping
// [ErrLostRecords] before anything past the range is decided, so the committed offset stays
// below it and the next start reports it again; [LostContinue] sends a dead letter of class
// [dlq.ClassLost] carrying the range (its offset and [dlq.HeaderLostEnd]) to the partition's
// dead-letter topic, goes on from the log start, and commits past the range only once that
// letter's delivery is confirmed: the record of the loss is as durable as the commit that
// passes it. A fetch that answers out of range does not say which partition it was, so every
// owned partition whose next undecided offset is below its log start is reported, and
// records of the range it had fetched but not decided are dropped: the reported range is
// exactly the offsets never decided. A committed offset (or position) past the log end, left
// by a log that lost its tail or a topic made again, stops Run under either policy.
//
// # Rebalances
//
// On assignment the consumer reads the committed offsets with their metadata and the sink's
// closed_through, and restores each partition's watermark as max(metadata, closed_through);
// unreadable metadata is logged and falls back to closed_through. Each partition gets fresh
// windows, closed through the restored watermark so that replayed events of windows already
// written are late, and a ledger at the committed offset. On revocation it waits until every
// message polled before is decided, flushes state, writes the partition's closes, commits its
// durable prefix, then drops its state. A lost assignment is dropped without writing or
// committing anything. Both the eager assignors (range, roundrobin) and cooperative-sticky
// work; errors of a commit racing a rebalance are expected and logged, not fatal.
//
// # Idle partitions, lag and backpressure
//
// A partition is idle when it is caught up (its position equals the client's cached high
// watermark) and quiet for [Config.IdleTimeout]; its watermark then follows the wall clock
// from its last message, so its windows close (see package watermark). Lag is high watermark
// minus position. [Config.BufferLimit] bounds the memory the consumer holds: the client's
// prefetch is set to a share of it, a write backlog past its share is written at once (the
// loop waits while the writes run once they and what it decides would press the bound, and the
// client keeps what it fetched; while writes fail, every partition is paused), and open
// windows past theirs pause the partitions holding the most. The loop keeps polling between
// writes, and a wait for one ends within its deadline, under half of max.poll.interval.ms, so
// the group never evicts the consumer, also while a write is being retried.
//
// # Bounded runs and liveness
//
// With [Config.Until], Run consumes each partition up to a stop offset, from its committed
// offset or, on a group without one, from where auto.offset.reset says (which a bounded run
// must set). It closes each partition's windows with an end-of-input watermark that ends at
// the end of the last window holding data in any partition of the topics, and returns once
// everything it owns is written and committed; it logs the merged rows that still wait for
// partitions it does not own. A later run of the group decides events at or before that
// watermark as late.
//
// [Consumer.Health] tells a consumer that holds partitions and writes from one that has held
// no partition for longer than [Config.AssignmentWait] (which it also logs) or whose writes
// are stalled. Run logs, when it subscribes, that it waits for the group to assign
// partitions, and once more if none came within a session timeout (session.timeout.ms, 45 s
// by default). That wait is the group protocol's: the coordinator rebalances once every member
// it knows has rejoined or timed out, so a member restarted after a crash (kill -9) waits for
// its dead predecessor's session to time out. With group.instance.id set (static membership,
// KIP-345), a restarted member with the same ID takes its predecessor's place and partitions
// at once; in exchange librdkafka does not leave the group when a static member closes, so the
// partitions of a member that stops for good wait for its session to time out.
//
// # Fetch order
//
// The client decides which partitions' messages arrive when. librdkafka keeps one queue of
// fetched messages for all the assigned partitions, and queued.min.messages and
// queued.max.messages.kbytes bound that queue as a whole, not each partition. When the queue
// reaches a bound every partition leaves the client's fetch list, and when it falls below
// they come back in partition order, so the next fetch request names them from the first
// partition again; the broker fills a response (fetch.max.bytes) in the request's order, up
// to max.partition.fetch.bytes per partition. So while the consumer decides more slowly than
// the client fetches (a slow handler, a slow sink), every refill goes to the same first
// partitions, and a partition further down the list gets nothing until they run out; a
// merged row waits for every partition of its topics, so none completes meanwhile. The
// consumer's fetch.max.bytes is an eighth of its prefetch (see [Config.BufferLimit]), 2 MiB by
// default: room for two partitions at librdkafka's 1 MiB per partition. A Kafka configuration
// that sets fetch.max.bytes to at least the assigned partitions times
// max.partition.fetch.bytes gives each partition a share of every response, at the cost of
// that much client memory per response (a response stays in memory until its last message is
// consumed). kfake, franz-go's in-process broker, also counts a batch that it leaves out for
// the partition limit against fetch.max.bytes, so its responses can hold one partition where
// Kafka's would hold two.
//
// # Shutdown
//
// Cancelling Run's context, or an [ErrEffect], stops taking messages, decides the messages
// already polled, waits for the delivery reports of dead letters in flight, flushes, writes
// and commits what is durable (never past it), gives the partitions up and closes the client
// in a goroutine of its own (confluent-kafka-go's Close can hang: issue 189), all within
// [Config.ShutdownTimeout], of which the close gets at least a quarter. The loop waits at
// most 10 s for an offset commit (librdkafka waits for the group coordinator without a
// bound): a commit that takes longer is taken as failed, and no other is sent until it
// returns; a stop ends that wait at once, and the shutdown waits for such a commit, then
// sends its own, within its deadline. [Consumer.Abort] cuts the shutdown short, or stops a
// running consumer where it is, as a crash would: it cancels the context of a batch of
// effects in progress, and no later message is decided and nothing more committed.
//
// # Observability
//
// Hooks ([Hook]) are optional single-method interfaces found by type assertion: per message
// ([HookMessage], which tells an applied effect), per dead-letter report, per write (with its
// latency), per commit, per assignment and revocation, and per tick the gauges of each
// partition (watermark, lag, uncommitted messages, open windows) and the totals. Message
// hooks run on the workers; the others on the polling goroutine. [Consumer.Counters] returns
// running totals from any goroutine. Logs go to a [log/slog] logger.
//
// [sink.Sink]: https://pkg.go.dev/github.com/streamledger/streamledger/sink#Sink
// [sink.CloseBatch]: https://pkg.go.dev/github.com/streamledger/streamledger/sink#CloseBatch
// [sink.CloseBatch.Empty]: https://pkg.go.dev/github.com/streamledger/streamledger/sink#CloseBatch
// [sink.Result]: https://pkg.go.dev/github.com/streamledger/streamledger/sink#Result
// [sink.Rejected]: https://pkg.go.dev/github.com/streamledger/streamledger/sink#Rejected
// [sink.Conflict]: https://pkg.go.dev/github.com/streamledger/streamledger/sink#Conflict
package consumer
