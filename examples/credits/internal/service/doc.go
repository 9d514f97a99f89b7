// Package service is the consumer of the credits example: it reads credits from a Kafka topic
// and applies each exactly once to a Postgres balance, within the database transaction and
// while operation markers are retained.
//
// It is built directly on confluent-kafka-go, the ledger ([ledger.Tracker]), the effect sink
// ([postgres.Effects]) and the dead-letter producer ([dlqkafka.Producer]): the "embed the
// ledger alone in your own service" use of streamledger. The windowed runtime
// (package ledger/consumer) does not fit: it aggregates events into windows and
// last-write-wins rows, while a credit is one non-idempotent effect per message.
//
// # Per message
//
// On the loop goroutine, in partition order:
//
//  1. decode the JSON credit; a message that is not a valid credit goes to the dead-letter
//     topic (ledger condition [ledger.Ack]);
//  2. apply it with [postgres.Effects.Apply]: in ONE transaction, insert the marker
//     (op_id, payload hash) with ON CONFLICT DO NOTHING, and only if it was accepted, credit
//     the balance and write the account entry;
//  3. sink.Applied or sink.Duplicate: the message is durable at once (the zero
//     [ledger.Condition]); a credit the sink refuses (unknown account, conflicting payload,
//     refused by the database, beyond the marker horizon) is rolled back with its marker and
//     dead-lettered; any other failure stops the service before the message is recorded.
//
// Offsets are committed with CommitOffsets (enable.auto.commit=false,
// enable.auto.offset.store=false) every [Config.CommitInterval], and only what
// [ledger.Tracker.Commits] says is durable: a dead letter counts once its delivery report is
// positive, never when it is sent.
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
// [Service.Abort] stops the consumer as a crash would, and [Hooks] let tests call it at each
// point; the tests of this package walk the table with the real client, an in-process broker
// and Postgres.
//
// # Rebalances and shutdown
//
// A revoked partition's durable prefix is committed before it is handed over; a lost one is
// dropped without a commit (another consumer may own it already). Cancelling Run's context
// shuts down gracefully: dead letters in flight are waited for, the durable prefix committed,
// the client closed.
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
// [postgres.Effects]: https://pkg.go.dev/github.com/streamledger/streamledger/sink/postgres#Effects
// [postgres.Effects.Apply]: https://pkg.go.dev/github.com/streamledger/streamledger/sink/postgres#Effects.Apply
// [dlqkafka.Producer]: https://pkg.go.dev/github.com/streamledger/streamledger/dlq/dlqkafka#Producer
package service
