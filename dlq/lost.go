package dlq

import "fmt"

// ClassLost is the error class of a dead letter that stands for records lost before a consumer
// read them: retention or DeleteRecords moved the log start of their partition past the
// consumer's position. Such a letter holds no message (its key and value are null); it carries
// the range instead: [HeaderOffset] is its first offset and [HeaderLostEnd] one past its last.
// A replay never republishes one (see [Policy.Decide]): there is nothing to republish.
const ClassLost = "streamledger.lost"

// LostError is the cause of a dead letter of [ClassLost]: the records of Topic's Partition at
// offsets [From, To) were deleted before the consumer read them. [NewDeadLetter] takes To into
// [DeadLetter.LostEnd].
type LostError struct {
	Topic     string
	Partition int32
	From, To  int64
	// Reason says how the consumer found out: its committed offset was below the log start
	// when it was assigned the partition, or a fetch answered that its offset was out of range.
	Reason string
}

func (e *LostError) Error() string {
	return fmt.Sprintf("%s/%d offsets [%d, %d) (%d records) were deleted before they were read: %s",
		e.Topic, e.Partition, e.From, e.To, e.To-e.From, e.Reason)
}

// ErrorClass implements [Classifier]: [ClassLost].
func (e *LostError) ErrorClass() string { return ClassLost }
