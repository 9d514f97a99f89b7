// Package produce publishes feed records to Kafka with confluent-kafka-go: an idempotent
// producer (no duplicates, no reordering within a partition on retries) that places every
// record in the partition [feed.Partition] names for its key, with the record's timestamp,
// so that the oracle knows where each record lands without asking the broker.
package produce
