// Package dlqkafka writes and replays streamledger's dead letters with confluent-kafka-go
// (librdkafka, cgo). The layout of a dead letter, error classes and the replay policy live in the
// client-free package [github.com/streamledger/streamledger/dlq].
//
// # Writing dead letters
//
// A [Producer] sends a message that a consumer gave up on to its dead-letter topic (by default
// "dlq.<topic>", see [Config].Topic), in the same partition number as the source, with the
// original key, value and headers plus the headers of [dlq.DeadLetter.Headers]. The letter's Kafka
// timestamp is its time of failure, from the injectable [Config].Clock.
//
// The producer is idempotent (enable.idempotence=true, forced) and the API makes the ledger rule
// the natural one: [Producer.Send] takes a done function that receives the letter's outcome
// exactly once, a nil error only on a positive delivery report. Only then is the source
// message durable and its offset committable:
//
//	off := msg.TopicPartition.Offset
//	err := p.Send(ctx, dlqkafka.RecordFromMessage(msg), cause, func(err error) {
//		results <- result{off, err} // to the consumer loop, which acks the entry only if err == nil
//	})
//
// A failed delivery is produced again, up to [Config].Retry.MaxAttempts attempts, then reported with a
// [*DeliveryError], never as a success. [Producer.Close] waits for outstanding letters until its
// context ends, then purges the rest and reports them as failed.
//
// # Dead-letter topics
//
// The producer never lets the broker auto-create a topic (allow.auto.create.topics=false,
// forced): the broker would use its default partition count, and partition numbers would no
// longer match. A missing dead-letter topic is created through the admin client with the source
// topic's partition count when [Config].CreateTopics is set; otherwise Send returns a
// [*TopicError] wrapping [ErrTopicMissing] that names the topic and the partition count to create
// it with. A dead-letter topic with fewer partitions than its source is [ErrTooFewPartitions].
//
// # Replay
//
// [Replay] reads a dead-letter topic with its own consumer group from where that group left it
// to the high watermark as of the start, and republishes the letters a [dlq.Policy] selects to the
// original (or a chosen) topic and partition: original key, value and headers, without the
// reserved headers, plus [dlq.HeaderReplayCount] one higher. The group's offsets are committed
// only past letters whose delivery was confirmed (or that were skipped, refused or invalid), so a
// crashed or failed replay resumes at the first unconfirmed letter. A letter replayed
// [dlq.Policy].MaxReplays times that failed again is refused, not republished: no poison loops.
// A dry run ([ReplayConfig].DryRun) decides the same way, produces and commits nothing, and its
// [dlq.Report] groups the letters by error class with counts.
//
// # Metrics
//
// [Config].Hooks observe the producer ([HookDelivery]): for each letter Send accepted, where it
// was written, its produce attempts and its latency from Send. The outcome itself is the done
// function's, which the consumer runtime reports. The package imports no metrics library; the
// Prometheus adapter in ledger/consumer/prom implements the hook.
//
// # Configuration
//
// Settings the guarantees depend on are forced, and a user value that contradicts one is an
// error ([ErrConfig]) rather than silently replaced; everything else in the librdkafka map (TLS,
// SASL, client.id) passes through.
package dlqkafka
