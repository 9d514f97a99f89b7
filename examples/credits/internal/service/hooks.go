package service

import (
	"fmt"
	"time"

	"github.com/streamledger/streamledger/examples/credits/internal/credit"
	"github.com/streamledger/streamledger/ledger"
)

// Outcome is what the service decided for one delivery.
type Outcome int

const (
	// Applied: this delivery's transaction committed the marker and the credit.
	Applied Outcome = iota + 1
	// Duplicate: the marker of the same credit was committed before; no credit this time.
	Duplicate
	// DeadLettered: the message was handed to the dead-letter producer; its offset becomes
	// committable once the delivery is confirmed.
	DeadLettered
)

func (o Outcome) String() string {
	switch o {
	case Applied:
		return "applied"
	case Duplicate:
		return "duplicate"
	case DeadLettered:
		return "dead-lettered"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Delivery is one consumed message.
type Delivery struct {
	ledger.TopicPartition
	Offset    int64
	Timestamp time.Time     // the record's timestamp; zero when it had none
	Credit    credit.Credit // zero when the message did not decode
}

func (d Delivery) String() string {
	return fmt.Sprintf("%s@%d", d.TopicPartition, d.Offset)
}

// Decision is the outcome of one delivery.
type Decision struct {
	Delivery
	Outcome Outcome
	// Class and Err say why a message was dead-lettered.
	Class string
	Err   error
}

// Hooks observe the service. BeforeApply and Decided run on the consumer's workers, for
// different partitions at once, so they must be safe for concurrent use; Committed runs on the
// polling goroutine. None may block for long. A hook may call [Service.Abort] to make the
// consumer stop right there, as a crash would (the tests' crash points). Nil hooks are
// skipped.
type Hooks struct {
	// BeforeApply runs for a batch of credits that decoded, one partition's in offset order,
	// before the sink transaction that applies them begins.
	BeforeApply func([]Delivery)
	// Decided runs once per delivery after it was decided: after its batch's transaction
	// committed (applied) or found the marker (duplicate), or when the message is
	// dead-lettered (just before its letter is handed to the producer); before any offset
	// commit covering it. The deliveries of a partition come in offset order.
	Decided func(Decision)
	// Committed runs after the broker accepted an offset commit.
	Committed func([]ledger.Commit)
}
