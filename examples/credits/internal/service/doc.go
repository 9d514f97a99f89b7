// Package service is the consumer of the credits example: it reads credits from a Kafka topic
// and applies each exactly once to a Postgres balance, within the database transaction and
// while operation markers are retained.
//
// It is a thin layer over the consumer runtime ([consumer.Consumer], package ledger/consumer)
// in its per-message effect mode and the effect sink ([postgres.Effects]): the runtime owns the
// loop, the ledger, the offset commits, rebalances, dead letters and shutdown; this package
// owns what is about credits: decoding, the effect and what counts as a refusal, the accounts
// tables, the marker horizon and its pruning.
//
// # Per message
//
// On the runtime's loop goroutine, in partition order:
//
//  1. decode the JSON credit; a message that is not a valid credit is dead-lettered;
//  2. the credit's [consumer.Event.Effect] applies it with [postgres.Effects.Apply]: in ONE
//     transaction, insert the marker (op_id, payload hash) with ON CONFLICT DO NOTHING, and
//     only if it was accepted, credit the balance and write the account entry;
//  3. sink.Applied or sink.Duplicate: the message is durable at once and its offset is
//     committed at the next commit; a credit the sink refuses (unknown account, conflicting
//     payload, refused by the database, beyond the marker horizon) is rolled back with its
//     marker and dead-lettered with its class ([consumer.Reject]); any other failure stops the
//     service before the message is recorded (consumer.ErrEffect), after committing what is
//     durable, so a restart applies it.
//
// Offsets are committed every [Config.CommitInterval], and only the ledger's durable prefix: a
// dead letter counts once its delivery report is positive, never when it is sent.
//
// # Crash points
//
// The consumer can die anywhere; the seed's table says what each place leaves behind:
//
//	before the sink transaction    no credit, no marker       redelivered, applied
//	inside it                      rolled back                redelivered, applied
//	after its commit, before the   credit and marker durable  redelivered, found duplicate:
//	offset commit                                              no second credit
//	after both                     credit and marker durable  not redelivered; a replay is a
//	                                                          duplicate
//
// [Service.Abort] stops the consumer as a crash would (the runtime's Abort cancels the
// transaction in progress), and [Hooks] let tests call it at each point; the tests of this
// package walk the table with the real client, an in-process broker and Postgres.
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
// [consumer.Event.Effect]: https://pkg.go.dev/github.com/streamledger/streamledger/ledger/consumer#Event
// [consumer.Reject]: https://pkg.go.dev/github.com/streamledger/streamledger/ledger/consumer#Reject
// [postgres.Effects]: https://pkg.go.dev/github.com/streamledger/streamledger/sink/postgres#Effects
// [postgres.Effects.Apply]: https://pkg.go.dev/github.com/streamledger/streamledger/sink/postgres#Effects.Apply
package service
