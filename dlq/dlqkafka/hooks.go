package dlqkafka

import (
	"fmt"
	"time"
)

// Hook is a value that implements one or more of the Hook* interfaces of this package: the
// metrics of a [Producer], reported to whoever observes it. The producer finds them by type
// assertion, so a metrics adapter implements only what it exports and this package imports
// no metrics library. A hook must not block.
type Hook any

// HookSend is called when [Producer.Send] returns, on the caller's goroutine: Send may be
// called from several goroutines at once, and so may the hook.
type HookSend interface {
	OnSend(SendInfo)
}

// HookDelivery is called with the outcome of every letter Send accepted, on the producer's
// delivery goroutine, just before the letter's done function.
type HookDelivery interface {
	OnDelivery(DeliveryInfo)
}

// SendInfo describes one Send call.
type SendInfo struct {
	// Source and Partition are the source topic and partition of the letter.
	Source    string
	Partition int32
	// Duration is the call's: the dead-letter topic's lookup (or creation) and the wait for
	// room in the client's queue.
	Duration time.Duration
	// Err is what Send returned: nil when the letter was handed to the client.
	Err error
}

// DeliveryInfo describes the outcome of one dead letter.
type DeliveryInfo struct {
	// Source is the source topic of the letter; Topic, Partition and Offset locate it in the
	// dead-letter topic, Offset -1 unless it was delivered.
	Source, Topic string
	Partition     int32
	Offset        int64
	// Attempts is the number of produce attempts; above 1 the earlier ones failed.
	Attempts int
	// Latency is the time from Send to the outcome.
	Latency time.Duration
	// Err is what Send's done receives: nil only on a positive delivery report.
	Err error
}

// hooks holds the configured hooks split by interface.
type hooks struct {
	send     []HookSend
	delivery []HookDelivery
}

// newHooks splits hs, or returns an error naming the first value that implements neither
// interface.
func newHooks(hs []Hook) (hooks, error) {
	var h hooks
	for i, x := range hs {
		s, sok := x.(HookSend)
		d, dok := x.(HookDelivery)
		if !sok && !dok {
			return hooks{}, fmt.Errorf("%w: Hooks[%d]: %T implements none of HookSend and HookDelivery", ErrConfig, i, x)
		}
		if sok {
			h.send = append(h.send, s)
		}
		if dok {
			h.delivery = append(h.delivery, d)
		}
	}
	return h, nil
}
