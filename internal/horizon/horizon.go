// Package horizon resolves the retention horizon of what a sink keeps to recognise a
// redelivery (folded windows, effect markers) against the retention of the source that can
// redeliver, the same way in every configuration that has one.
package horizon

import (
	"fmt"
	"time"

	"github.com/streamledger/streamledger/sink"
)

// Default is the horizon of a configuration that leaves it zero.
const Default = 7 * 24 * time.Hour

// Resolve resolves a configured horizon h against the source's retention: zero means
// [Default] and negative means forever (returned as 0). A zero retention declares nothing; a
// positive one is how far back the source can redeliver, and a negative one a source that
// keeps records forever. A finite horizon shorter than the retention is refused with an error
// wrapping sink.ErrConfig and sink.ErrHorizon that names the fields (field and retentionField): a redelivery from
// beyond it would not be recognised.
func Resolve(h, retention time.Duration, field, retentionField string) (time.Duration, error) {
	switch {
	case h == 0:
		h = Default
	case h < 0:
		return 0, nil
	}
	switch {
	case retention < 0:
		return 0, fmt.Errorf("%w: %w: %s %v is finite, but %s is negative (the source keeps records forever): set %s negative too",
			sink.ErrConfig, sink.ErrHorizon, field, h, retentionField, field)
	case retention > 0 && h < retention:
		return 0, fmt.Errorf("%w: %w: %s %v is shorter than %s %v: a redelivery from before the horizon would not be recognised",
			sink.ErrConfig, sink.ErrHorizon, field, h, retentionField, retention)
	}
	return h, nil
}
