// Package chaos is the OV example's reliability harness: it proves the guarantee of the
// design (G1-G3) under real faults, with the broker and the processors as separate OS
// processes and the real Postgres, and prints a table of what it did.
//
// # A scenario
//
// Each scenario starts its own broker process ("ov broker" on a free port: kfake, in memory),
// creates a Postgres schema of its own, produces the fixed simulated feed (package feed,
// deterministic for its seed, with disorder, late and malformed messages) over a span of wall
// time while it injects its faults into processor processes ("ov run", with a short flush
// interval and the --clock-rate test hook), then drains: it stops the processors gracefully,
// starts one with a short idle timeout and waits until every partition of both topics is
// committed through its last record (so every window was written, every dead letter
// confirmed). It then compares with the oracle, computed in one plain pass over the same
// records (package oracle, compared through package verify):
//
//   - every row of delay_aggregates, vehicle_latest and trip_delay_latest: no missing, extra or
//     different row;
//   - the dead-letter topics: their distinct source offsets are exactly the malformed records,
//     with the original key, value and error class, on the source's partition number
//     (redelivered identical copies are allowed: a letter confirmed but not yet committed past
//     is sent again by the next owner);
//   - the accounting (G3). Per-process counters overcount across restarts (a redelivered
//     message is decided again by each process that sees it), so what is compared is what is
//     stored: every offset is committed; the oracle's classification of each record once gives
//     consumed = admitted + late + dead-lettered; the network dimension, which every admitted
//     prediction feeds exactly once, sums to the oracle's admitted predictions (a late event
//     admitted, or an admitted one lost, changes the sum); the distinct dead letters equal the
//     malformed records.
//
// The schema is dropped and the broker stopped afterwards.
//
// # The scenarios
//
//   - kill: one processor killed with SIGKILL at random instants (0.3 to 2.5 s after each start)
//     and restarted, 30 times in the full run (12 in the short one). It uses static group membership so that a restart
//     replaces the dead member at once.
//   - group-range, group-cooperative: three processors in one group, with random joins,
//     graceful leaves and kills (each a rebalance), under the range and the
//     cooperative-sticky assignor.
//   - postgres: the processor's Postgres backends terminated (pg_terminate_backend by
//     application_name) every 0.2 to 0.7 s; in the full run the server is also stopped for
//     five seconds and started again (pg_ctlcluster), never in the short run, whose server
//     other packages' tests share.
//   - idle-partition: partition 0 of both topics receives nothing in the second half of the
//     feed. Its windows must close after the idle timeout while the feed is still produced,
//     the other partitions must keep committing, and the ledger (processor_uncommitted_messages)
//     and the open windows (processor_open_windows) must stay within a bound derived from the
//     feed: the records of the busiest stretch of window + lateness + disorder + two ticks.
//     Its feed ends at the feed's end time, without the sparse tail of delayed predictions:
//     with the short idle timeout every partition runs with here, a partition goes idle in
//     that tail and a delayed prediction then arriving for a window the idle advance closed is
//     late (as the design says), while the oracle, which knows nothing of idleness, admits it.
//   - fault-points: a processor armed by $OV_FAULT kills itself at the Nth occurrence of a point
//     inside the process, through the consumer's hooks: after a close batch committed in
//     Postgres and before the offset commit; after a dead letter was handed to the producer and
//     before its delivery report; after the positive report and before the ack and commit; and
//     during a revocation (a second processor joins), after the revoke's commit and before the
//     hand-over.
//
// A broker restart is out of reach: the broker is kfake, in memory, so a restarted broker has
// lost every record and every committed offset. Faking it (replaying the feed into a new broker)
// would prove nothing about a real broker's recovery, so the harness does not.
//
// # Figures
//
// [WriteTable] prints per scenario: messages, kills, rebalances (membership changes), outages
// (rounds of terminated backends, server restarts), mismatched rows (must be 0), the highest
// processor_uncommitted_messages any processor exported, the peak resident set of the processor
// processes (VmHWM from /proc/<pid>/status, sampled every 100 ms while each runs; not wait4's
// ru_maxrss, which on Linux carries over the forking harness's own high-water mark), and the
// wall time.
package chaos
