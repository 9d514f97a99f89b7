package dlqkafka

import (
	"errors"
	"fmt"

	"github.com/streamledger/streamledger/dlq"
)

var (
	// ErrConfig means a configuration cannot be used as it is.
	ErrConfig = errors.New("dlqkafka: invalid configuration")
	// ErrClosed means the producer is closed or closing.
	ErrClosed = errors.New("dlqkafka: producer closed")
	// ErrTopicMissing means a dead-letter topic does not exist and may not be created.
	ErrTopicMissing = errors.New("dlqkafka: dead-letter topic does not exist")
	// ErrTooFewPartitions means a dead-letter topic has fewer partitions than its source, so some
	// source partition has no partition of the same number to go to.
	ErrTooFewPartitions = errors.New("dlqkafka: dead-letter topic has too few partitions")
	// ErrQueueFull means librdkafka's queue of messages to produce is full: the letter was not
	// sent; send it again later.
	ErrQueueFull = errors.New("dlqkafka: the producer's queue is full")
	// ErrTargetMissing means a replay's target topic or partition does not exist.
	ErrTargetMissing = errors.New("dlqkafka: replay target does not exist")
)

// TopicError is a dead-letter topic that cannot be used: missing ([ErrTopicMissing]), too small
// ([ErrTooFewPartitions]) or failing to be created. Its message names the topic and the partition
// count it needs, so that an operator can create it.
type TopicError struct {
	Topic            string // the dead-letter topic
	Source           string // the source topic
	Partitions       int    // the dead-letter topic's partition count; 0 when it does not exist
	SourcePartitions int    // the source topic's partition count; 0 when unknown
	Partition        int32  // the source partition being dead-lettered
	Err              error
}

func (e *TopicError) Error() string {
	switch {
	case errors.Is(e.Err, ErrTooFewPartitions):
		return fmt.Sprintf("dlqkafka: dead-letter topic %q has %d partitions, expected at least %d (source topic %q has %d, partition %d is being dead-lettered): add partitions to %q",
			e.Topic, e.Partitions, max(e.SourcePartitions, int(e.Partition)+1), e.Source, e.SourcePartitions, e.Partition, e.Topic)
	case e.Err == ErrTopicMissing:
		return fmt.Sprintf("dlqkafka: dead-letter topic %q does not exist: create it with %d partitions (the partition count of %q), or set Config.CreateTopics",
			e.Topic, e.SourcePartitions, e.Source)
	default:
		return fmt.Sprintf("dlqkafka: dead-letter topic %q does not exist and could not be created with %d partitions (the partition count of %q): %v",
			e.Topic, e.SourcePartitions, e.Source, e.Err)
	}
}

func (e *TopicError) Unwrap() error { return e.Err }

// DeliveryError is a dead letter (or a replayed message) that was not confirmed by the broker
// after every attempt. The broker may or may not have it: a timed-out or purged message can
// still have been written, so a retry can duplicate it, but it is never counted as delivered.
type DeliveryError struct {
	Topic     string
	Partition int32
	Source    dlq.Record // the message being written: the original record
	Attempts  int
	Err       error // the last attempt's error, usually a kafka.Error
}

func (e *DeliveryError) Error() string {
	return fmt.Sprintf("dlqkafka: %v not confirmed by %s[%d] after %d attempts: %v", e.Source, e.Topic, e.Partition, e.Attempts, e.Err)
}

func (e *DeliveryError) Unwrap() error { return e.Err }
