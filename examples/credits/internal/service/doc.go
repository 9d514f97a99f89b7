// Package service is the consumer of the credits example: it reads credits from a Kafka topic
// and applies each exactly once to a balance in Postgres or MySQL ([Config.Pool] or
// [Config.MySQL]), within the database transaction and while operation markers are retained.
//
// It is a thin layer over the consumer runtime ([consumer.Consumer], package ledger/consumer)
// with batched effects and the effect sink ([postgres.Effects], or mysql.Effects on MySQL,
// through accounts.Store): the runtime owns the loop,
// the workers, the ledger, the offset commits, rebalances, dead letters and shutdown; this
// package owns what is about credits: decoding, the effect and what counts as a refusal, the
// accounts tables, the marker horizon and its pruning.
//
// # Per batch
//
// The handler decodes each message's JSON credit, which is the message's effect (a message that is
// not a valid credit is dead-lettered). The runtime's workers hand each partition's credits, in
// offset order, to the service in batches of at most [Config.Batch], several partitions at once
// ([Config.Workers]), and the service applies a batch with [postgres.Effects.Apply]: in ONE
// transaction, insert every credit's marker (op_id, payload hash) with ON CONFLICT DO NOTHING (ON
// DUPLICATE KEY UPDATE on MySQL), credit the accounts of the credits whose marker was accepted and
// write their entries, and remove the markers of the credits that credited no account. Per credit:
//
//   - applied or duplicate: the message is durable once the batch committed, and its offset
//     is committed at the next commit;
//   - a credit the sink refuses (unknown account, conflicting payload, refused by the
//     database, beyond the marker horizon) leaves no marker and is dead-lettered with its
//     class (its [sink.Result] stays rejected or conflicting); the rest of its batch is applied;
//   - a batch that fails whole (the database unreachable after the sink's retries) stops the
//     service before any of its credits is recorded (consumer.ErrEffect), after committing
//     what is durable, so a restart applies the batch again.
//
// Offsets are committed every [Config.CommitInterval], and only the ledger's durable prefix: a
// dead letter counts once its delivery report is positive, never when it is sent.
//
// # Crash points
//
// The consumer can die anywhere; per credit and per batch, each place leaves this behind:
//
//	before the batch's transaction   no credit, no marker         redelivered, applied
//	inside it, before its commit     rolled back                  redelivered, applied
//	after its commit                 credits and markers durable  redelivered, found
//	                                                              duplicate: no second credit
//	after both commits               credits and markers durable  not redelivered; a replay
//	                                                              is a duplicate
//
// [Service.Abort] stops the consumer as a crash would (the runtime's Abort cancels the
// transaction in progress), and [Hooks] let tests call it at each point; the tests of this
// package walk the table with the real client, an in-process broker and Postgres, one credit
// per transaction and in batches.
//
// # Retention
//
// Markers are kept for [Config.Horizon] and pruned after it. A horizon shorter than the
// topic's retention ([Config.SourceRetention], see [TopicRetention]) is refused
// ([sink.ErrHorizon]): the topic could redeliver a credit whose marker is gone. A credit whose
// record is older than the horizon and that finds no marker is refused and dead-lettered
// ([ClassBeyondHorizon]) rather than applied, so that even a replay from elsewhere (a
// backup, a copied topic) cannot credit twice; record timestamps are trusted to be no later
// than the service's clock.
//
// [consumer.Consumer]: https://pkg.go.dev/github.com/streamledger/streamledger/ledger/consumer#Consumer
// [postgres.Effects]: https://pkg.go.dev/github.com/streamledger/streamledger/sink/postgres#Effects
// [postgres.Effects.Apply]: https://pkg.go.dev/github.com/streamledger/streamledger/sink/postgres#Effects.Apply
package service
