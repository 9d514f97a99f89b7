package dlqkafka

import (
	"fmt"
	"time"
)

// Hook is a value that implements [HookDelivery]: the metrics only a [Producer] knows,
// reported to whoever observes it. The producer finds them by type assertion, so this package
// imports no metrics library. A hook must not block.
//
// The outcome of a letter (delivered or not) is not a hook's: the done function of
// [Producer.Send] receives it, and the consumer runtime reports it
// (consumer.HookDeadLetter). A hook gets what the caller of Send cannot see: where the letter
// was written, how many produce attempts it took, and how long.
type Hook any

// HookDelivery is called once the producer is done with a letter that Send accepted, on the
// producer's delivery goroutine, just before the letter's done function.
type HookDelivery interface {
	OnDelivery(DeliveryInfo)
}

// DeliveryInfo describes the producer's work on one dead letter.
type DeliveryInfo struct {
	// Source is the source topic of the letter; Topic, Partition and Offset locate it in the
	// dead-letter topic, Offset -1 unless it was delivered.
	Source, Topic string
	Partition     int32
	Offset        int64
	// Attempts is the number of produce attempts; above 1 the earlier ones failed.
	Attempts int
	// Latency is the time from Send to the outcome, the attempts and their backoff included.
	Latency time.Duration
}

// newHooks returns the hooks of hs, or an error naming the first value that does not
// implement HookDelivery.
func newHooks(hs []Hook) ([]HookDelivery, error) {
	var out []HookDelivery
	for i, x := range hs {
		d, ok := x.(HookDelivery)
		if !ok {
			return nil, fmt.Errorf("%w: Hooks[%d]: %T does not implement HookDelivery", ErrConfig, i, x)
		}
		out = append(out, d)
	}
	return out, nil
}
