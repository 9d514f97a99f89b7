// Package dlq is the client-free core of streamledger's dead letters: what a dead letter carries,
// how it is written to and read back from Kafka record headers, how a failure is classified, and
// which letters a replay republishes. It imports no Kafka client; package
// [github.com/streamledger/streamledger/dlq/dlqkafka] produces and replays dead letters with
// confluent-kafka-go.
//
// # Dead letters
//
// A message that a consumer cannot handle (it fails to decode or validate) goes to the
// dead-letter topic of its source, by default [DefaultTopic] ("dlq.<topic>"), in the SAME
// partition number as the source, with its original key, value and headers. So the dead-letter
// topic has the source's partition count and a replay keeps each partition's order (Kafka
// Connect's one-partition DLQ loses it). [NewDeadLetter] builds the [DeadLetter]: the original
// [Record] plus the failure's class and message, the consumer and the time of failure.
//
// # Headers
//
// [DeadLetter.Headers] writes the original headers first, in order, then headers with the
// reserved prefix [HeaderPrefix] ("__streamledger.dlq."), modelled on Kafka Connect's
// `__connect.errors.*`: [HeaderVersion], [HeaderTopic], [HeaderPartition], [HeaderOffset],
// [HeaderTimestamp], [HeaderErrorClass], [HeaderErrorMessage], [HeaderConsumer],
// [HeaderFailedAt], [HeaderReplayCount] and, on a letter of [ClassLost], [HeaderLostEnd].
// Values are text, readable with any Kafka tool. [Decode] reads them back; it never panics on
// garbage, and its error says which header was wrong and what it found ([ErrBadHeader],
// [ErrNotDeadLetter]).
//
// Reserved headers belong to this package: they are dropped from an original message when it is
// dead-lettered and never republished by a replay, with one exception. [HeaderReplayCount]
// travels with a replayed message, so that if it fails again its dead letter knows how many times
// it has been replayed.
//
// # Error classes
//
// [ErrorClass] names the cause of a failure for grouping: an error (anywhere in the chain) that
// implements [Classifier] names its own class; otherwise the class is the Go type of the
// underlying error, looking through [fmt.Errorf] wrapping.
//
// # Lost records
//
// A letter of [ClassLost] holds no message: it records that the records of a range of offsets
// were deleted (by retention or DeleteRecords) before the consumer read them, so that an
// operator finds the loss later where the consumer's other failures are. It goes to the
// dead-letter topic of the source, in the source's partition, with [HeaderOffset] the range's
// first offset and [HeaderLostEnd] one past its last; its cause is a [*LostError]. A replay
// skips it.
//
// # Replay
//
// A [Policy] decides, letter by letter, whether a replay republishes it ([Replay]), leaves it out
// because a filter (failure time, error class) does not select it ([Skip]), refuses it because
// it has been replayed [Policy].MaxReplays times already and failed each time ([Refuse]: no
// poison loops), or stops because the replay's Limit is reached ([Stop]). [Report] counts the
// decisions by error class; it is what a dry run shows.
//
// # Durability
//
// The guarantee streamledger builds on this package: a dead letter makes its source offset
// committable only once the dead-letter topic's broker has confirmed it (a positive delivery
// report), never when it is merely sent. That part lives in dlqkafka and in the consumer runtime.
package dlq
