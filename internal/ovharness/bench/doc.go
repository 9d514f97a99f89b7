// Package bench measures the OV processor end to end: the real client (confluent-kafka-go)
// against an in-process Kafka-protocol broker (franz-go's kfake), into the real Postgres, on a
// feed produced before the clock starts.
//
// # What one case measures
//
// Run generates a feed (package feed) at a scale, produces all of it to a fresh broker with
// the example's producer, and then consumes it twice with the same client and the same
// consumer settings:
//
//   - raw: a plain confluent-kafka-go consumer that polls every message and does nothing with
//     it, timed from its first message to its last: the reference rate;
//   - pipeline: the OV processor (package pipeline) against its own Postgres schema, timed
//     from the first message decided to the commit that reaches the end of every partition
//     (the drain: committed offsets equal the high watermarks), so the time includes the last
//     windows' writes. The run is bounded (consumer.Config.Until with End): each partition
//     stops at its end offset as of the start, its last windows close with the end-of-input
//     watermark at the next tick, and Run returns once everything is written and committed.
//
// The ratio pipeline/raw is the processing overhead, measured in the same process on the same
// machine, which is steadier than either rate on a shared machine.
//
// # Stages
//
// The runtime's hooks and a wrapper around the handlers split the pipeline's wall time into:
// the client (Poll and the loop between two messages), decode (the handler: scan, validate,
// build the event), apply (everything the runtime does with a decoded event: late test,
// windows, state buffer, ledger, watermark, hooks), the ticks (closing windows and starting
// the writes of state flushes and close batches to Postgres, and commits) and the sink wait (a
// tick that came while the previous tick's writes were in flight, with the write backlog past
// a quarter of the memory budget, waits for them, deciding nothing: consumer.TickInfo.Waited),
// counted while messages are still being decided; the drain, from the last message decided to
// the last commit, is apart. The runtime has no hook between its windowing and its ledger, so
// apply is one figure; a CPU profile (--cpuprofile) splits it.
//
// # Memory
//
// The consuming phases run in a child process, apart from the broker and its copy of the
// feed (unless --in-process). Its peak RSS (VmHWM) is the pipeline phase's own: before it the
// Go heap and the C heap the raw consumer freed are returned to the operating system and the
// peak is reset where the kernel allows it. The table also gives the RSS growth during the
// pipeline phase and the largest resident memory outside the Go runtime, sampled every 250 ms:
// librdkafka's buffers, the C allocator's arenas, the binary (a lower bound, as the runtime's
// mapped but untouched pages count as the runtime's). Memory per open (window, key) is the growth
// of the live Go heap over the baseline taken after the feed was produced (a forced GC when
// the open keys reach a new high, at a tick; that pause is excluded from the rates) divided by
// the open keys at that moment. It is an upper bound: it also holds the ledgers, the buffered
// state rows and the messages in flight.
//
// # Timeline
//
// With --timeline, the pipeline phase also writes a JSON line per tick and per write: its time
// since the phase began, the tick's wait for writes and the runtime's estimates, the write's
// kind, rows and duration, and the garbage collector's CPU since the line before with the live
// heap. The tables give a run's totals; the timeline shows which writes the loop waited for
// and whether the collector ran meanwhile.
package bench
