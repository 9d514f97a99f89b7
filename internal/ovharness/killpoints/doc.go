// Package killpoints arms the fault points of "ov run": with $OV_FAULT set
// (point:N[,point:N]) the process kills itself with SIGKILL, as kill -9 would, at the Nth
// occurrence of a point. It is a test hook of the reliability harness (package chaos), not a
// feature.
//
// # Where a point fires
//
// Each point is observed through the consumer's hooks, which run on the consumer's loop
// goroutine, so the process dies exactly between the two steps a point names:
//
//   - [CloseWritten]: a close batch committed in Postgres, its offsets not yet committed;
//   - [DLQSent]: a dead letter handed to the producer, its delivery report not yet received;
//   - [DLQReported]: the positive report received, the ledger not yet acked nor committed;
//   - [RevokeWritten]: during a revocation, a close batch with partials committed in
//     Postgres, the revocation's final offset commit not yet sent;
//   - [RevokeCommitted]: during a revocation, its final commit made, the partitions not yet
//     given up to the group.
//
// [Parse] refuses an unknown point or a count below 1; with nothing armed [Set.Hooks] returns
// no hook, so an unarmed process pays nothing.
package killpoints
