// Package chaos is the OV example's reliability harness: it proves the guarantee of the
// design (G1-G3) under real faults, with the broker and the processors as separate OS
// processes and the real Postgres, and prints a table of what it did.
//
// # A scenario
//
// Each scenario starts its own broker process ("ov broker" on free ports: kfake, in memory, or
// persisted to a directory where the scenario kills and restarts it; with a test endpoint,
// --admin-addr, through which the harness injects faults and moves leaders),
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
//   - kill: one processor killed with SIGKILL at random instants and restarted: 30 times in
//     the full run (0.3 to 2.5 s after each start), 20 in the short one (0.2 to 1.4 s, so that
//     they fit in its shorter feed). It uses static group membership so that a restart
//     replaces the dead member at once (no rebalance: the table shows the one of the first
//     start).
//   - group-range, group-cooperative: three processors in one group, with random joins,
//     graceful leaves and kills, under the range and the cooperative-sticky assignor. After
//     each change the scenario waits (up to 12 s) for the broker to form the next generation:
//     a change during a rebalance joins it, and kfake restarts a rebalance's timer at every
//     join, so changes faster than the group settles kept it rebalancing, with nobody
//     consuming, for as long as they came. The last member stays until another has joined
//     (an empty group forms no generation). It goes on until the broker has formed at least
//     ten generations.
//   - postgres: the processor's Postgres backends terminated (pg_terminate_backend by
//     application_name) every 0.2 to 0.7 s; in the full run the server is also stopped for
//     five seconds and started again (pg_ctlcluster), never in the short run, whose server
//     other packages' tests share.
//   - idle-partition: partition 0 of both topics receives nothing in the second half of the
//     feed. Its windows must close after the idle timeout while the feed is still produced,
//     the other partitions must keep committing, and the ledger (processor_uncommitted_messages)
//     and the open windows (processor_open_windows) must stay within a bound derived from the
//     feed: the records of the busiest stretch of window + lateness + disorder + two ticks.
//     Then the rest of the feed follows, and with it the design's rule for data after an idle
//     advance: partition 0's withheld records, whose predictions for windows the advance
//     closed are late, and the sparse tail of delayed predictions of every partition. An idle
//     advance keeps pace with the processor's clock until the partition's next record, so
//     the harness freezes it first: it stops the processor gracefully (the last close batch
//     writes the last advance, the final commit carries it), reads every prediction
//     partition's watermark back as the next owner restores it (max of the watermark in the
//     commit metadata, sl1;wm=..., and closed_through), and gives the oracle each as an
//     [oracle.Advance] at the partition's first record still to come: partition 0's idle
//     advance, and for the others their own data's watermark, which changes nothing (unless
//     one went idle too in the moment before the stop, which the oracle then knows). The
//     rest is produced while no processor runs (a partition with unread records is never
//     idle, so no other advance decides any of it) and read by the drain. The scenario fails
//     if the advance made no prediction late.
//   - fault-points: a processor armed by $OV_FAULT kills itself at the Nth occurrence of a
//     point inside the process, through the consumer's hooks: after a close batch committed in
//     Postgres and before the offset commit (close-written); after a dead letter was handed to
//     the producer and before its delivery report (dlq-sent); after the positive report and
//     before the ack and commit (dlq-reported); and during a revocation, while a second
//     processor joins and leaves: after one of the revocation's close batches with partials
//     committed in Postgres and before its final offset commit (revoke-written, from
//     consumer.WriteInfo.Revoke; the armed processor ticks only every two windows' worth of
//     wall time, so that its revocations have closed windows and state rows to write), and
//     after that commit and before the hand-over (revoke-committed).
//   - broker-restart: two processors while the broker process, persisted with --data-dir, is
//     killed with SIGKILL and started again from its directory on the same ports (twice in the
//     short run, five times in the full one, spread over the feed, down 0.5 to 2 s or 1 to 6
//     s). The processors reconnect on their own. During the last outage one processor (its
//     --shutdown-timeout 1 s) is stopped gracefully and the note says how long it took. kfake
//     saves the idempotent producer's sequences only when it stops, so a batch stored but not
//     acknowledged before a kill can be stored again by the producer's retry: the oracle is
//     computed from what the topics hold (the note says whether it differs from the feed).
//   - brokers: two processors on a broker of three nodes while, every 0.3 to 1.2 s, every
//     partition leader is shuffled, one partition's leader moves, or the group coordinators
//     move, and once half the feed is produced a node is removed (each counts as a move).
//   - protocol-errors: two processors while the broker fails requests on purpose (kfake's
//     Fault API): every dead letter of one prediction partition, from a malformed record not
//     yet produced, is refused with INVALID_RECORD for three refusals and at least 3 s (the
//     partition's committed offset must stay at or below that record's, and pass it once the
//     letters are accepted); then three OffsetCommits each with REBALANCE_IN_PROGRESS,
//     COORDINATOR_NOT_AVAILABLE and REQUEST_TIMED_OUT (answered after the commit is applied);
//     five Fetches each with NOT_LEADER_FOR_PARTITION, KAFKA_STORAGE_ERROR and
//     UNKNOWN_SERVER_ERROR; a Heartbeat with UNKNOWN_MEMBER_ID and one with
//     ILLEGAL_GENERATION, on which librdkafka declares the assignment lost: the partitions are
//     dropped without a final write or commit and replayed by their next owner.
//   - zombie: two processors; the one that ticks rarely (it holds closed windows not yet
//     written) is stopped with SIGSTOP for longer than its session timeout (9 s, 10 s in the
//     full run; once, three times), the group gives its partitions to the other, then it
//     continues. Its writes in flight complete late, and whatever it writes or commits with
//     its old generation must change nothing: every partition's closed_through is sampled every
//     100 ms and must never move back, and the oracle compares every row.
//   - group-consumer: the group scenario under KIP-848 (ov run --group-protocol consumer; the
//     broker sets the session, 6 s, and the heartbeat, 500 ms): joins, leaves and kills until
//     the broker formed ten group epochs.
//   - rapid-kills: the case that wedged a classic group: two processors with librdkafka's
//     default timeouts (the short run shortens the session to 6 s and keeps the 300 s
//     rebalance timeout the wedge turned on) killed six times (within 8 s, 30 s in the full
//     run) and restarted at once, so that some die while their JoinGroup waits. The group must
//     then be stable with both processors within 30 s (3 minutes in the full run). With
//     "ov chaos --broker-flags=--no-expiry" the broker keeps the members kfake never times
//     out, and the scenario fails: the group stays in PreparingRebalance.
//   - retention: one processor consumes the first half of the feed and stops; the second half
//     is produced while none runs, and DeleteRecords moves the log start of three positions
//     partitions (those committed through their end) to the middle of what was not read. The
//     next processor (every processor runs with --lost-records continue) reports each range
//     at assignment as a dead letter of class streamledger.lost and goes on; the oracle leaves
//     out exactly the deleted ranges, and the lost letters must report exactly them. The
//     faults column counts the deleted records.
//
// # Figures
//
// [WriteTable] prints per scenario: messages, kills, broker restarts, moves (leaders,
// coordinators, a node removed), lost partitions (given up without a final write or commit,
// counted in the processors' logs), zombies, rebalances (the group generations the broker
// formed while the faults ran, the drain's excluded: "ov broker" prints a line for each new
// generation a SyncGroup request names, or each new epoch of a KIP-848 group, and the harness
// counts them in its log), outages
// (rounds of terminated backends, server restarts), mismatched rows (must be 0), the highest
// processor_uncommitted_messages any processor exported (the drain's included, which reads
// what the faults left uncommitted at full speed), the peak resident set of the processor
// processes (VmHWM from /proc/<pid>/status, sampled every 100 ms while each runs; not wait4's
// ru_maxrss, which on Linux carries over the forking harness's own high-water mark), the
// wall time and the injected faults by kind.
package chaos
