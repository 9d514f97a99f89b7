// Package watermark tracks event-time watermarks per source partition for a
// windowed Kafka consumer, decides which events are late, detects idle
// partitions, and restores watermarks after a restart or rebalance.
//
// It imports the standard library only, holds no package-level state, and
// never reads the clock per event.
//
// # Partition watermark
//
// A [Partition] follows one (topic, partition) stream. Its watermark is
//
//	wm(P) = max event time seen in P - lateness
//
// with lateness [Config.Lateness] (120 s unless set). It never
// goes back: every update is a max with the current value, whatever order the
// event times come in.
//
// # Late events
//
// An event whose window end is <= wm(P) before the event is applied is late:
// [Partition.IsLate] answers with one comparison, and [Partition.Observe]
// then applies the event. Since both depend only on P's own sequence of
// messages (and on idle advances recorded in P's progress), replaying P from
// a committed offset repeats every decision.
//
// # Restore
//
// When P is assigned, [Partition.Restore] (or [Set.Assign]) sets
//
//	wm(P) = max(wm(P) as of the committed offset, closed_through(P))
//
// from a [RestorePoint]. The first comes from the commit's metadata string,
// the second from the sink's progress; either may be absent. Garbled or
// missing metadata falls back to closed_through(P); with neither, P is fresh.
// Events of windows already written are then late on replay, so a window is
// never rebuilt from a fragment. The maximum event time before the restore is
// taken to be wm(P) + lateness (later events then move wm(P) as they would
// have without the restart), and the restore instant stands in for the
// arrival of the last message.
//
// # Idle partitions
//
// A partition is idle when it is caught up (the caller reports its consume
// position at the high watermark, see [Partition.SetPosition]) and no message
// has arrived for [Config.IdleTimeout], measured with [Config.Clock] at each
// [Partition.Tick]. While idle, its event clock keeps pace with the wall clock
// from its last message:
//
//	wm(P) = max(wm(P), maxEventTime(P) + (now - arrival of P's last message) - lateness)
//
// so the windows of a quiet partition close and commit instead of waiting for
// its next message. Because it needs the partition to be caught up, the
// advance never overtakes unread data. [Partition.Tick] and [Set.Tick]
// report an advance: the caller writes it to P's progress (and commit
// metadata) before deciding any later message of P, so that a replay decides
// exactly as the first run did. The next message ends
// idleness; if it belongs to a window the advance closed, it is late.
//
// # Global watermark
//
// [Set.Min] is the global watermark: the minimum of wm(P) over the active
// (non-idle) partitions of a [Set], with the cases of no active partition and
// of unknown watermarks defined there. It is for the readiness of merged
// results only, never for a per-event decision.
//
// # Why per partition
//
// With a global watermark the late/admitted decision for an event depends on
// how the partitions' messages interleave, and that interleaving differs after
// a restart, so a crash could change a stored result. And one idle partition
// stalls a global watermark: no window closes, nothing commits, and the offset
// ledger grows without bound. With a per-partition watermark each decision is
// a function of the partition's own replayable sequence, and an idle partition
// closes its own windows. With a single partition the two definitions
// coincide.
//
// # Concurrency
//
// A [Partition] or [Set] is not safe for concurrent use; the goroutine that
// consumes the partitions owns them. Observe and IsLate do not allocate.
package watermark
