package dlq

import (
	"fmt"
	"slices"
	"time"
)

// defaultMaxReplays is the replay limit of a [Policy] whose MaxReplays is zero.
const defaultMaxReplays = 3

// Decision is what a replay does with one dead letter.
type Decision uint8

const (
	// Replay republishes the letter.
	Replay Decision = iota + 1
	// Skip leaves the letter out: a filter of the [Policy] does not select it.
	Skip
	// Refuse leaves the letter out because it has been replayed MaxReplays times already: it
	// failed after each replay, so another one would only loop.
	Refuse
	// Stop ends the replay before this letter: Limit letters have been replayed.
	Stop
)

var decisionNames = [...]string{Replay: "replay", Skip: "skip", Refuse: "refuse", Stop: "stop"}

func (d Decision) String() string {
	if int(d) < len(decisionNames) && decisionNames[d] != "" {
		return decisionNames[d]
	}
	return fmt.Sprintf("Decision(%d)", uint8(d))
}

// Policy decides which dead letters a replay republishes. The zero Policy replays every letter
// that has been replayed fewer than 3 times. In every field, zero means the default the field
// states; a negative value is refused ([Policy.Validate]).
type Policy struct {
	// MaxReplays refuses a letter whose ReplayCount is MaxReplays or more: a replay without a
	// limit can loop forever on a message that always fails. Zero means 3 (the default); a negative value is
	// refused.
	MaxReplays int
	// FailedFrom selects letters with FailedAt at or after it; zero means no lower bound.
	FailedFrom time.Time
	// FailedBefore selects letters with FailedAt before it; zero means no upper bound. With
	// either bound set, a letter without FailedAt is skipped.
	FailedBefore time.Time
	// Classes selects letters whose ErrorClass is one of these; empty means every class.
	Classes []string
	// Limit stops a replay once this many letters have been replayed. Zero means no limit; a
	// negative value is refused.
	Limit int
}

// Validate reports a setting that cannot be used, wrapping [ErrConfig] and naming the field.
func (p Policy) Validate() error {
	switch {
	case p.MaxReplays < 0:
		return fmt.Errorf("%w: Policy.MaxReplays: expected >= 0 (0 for %d), found %d", ErrConfig, defaultMaxReplays, p.MaxReplays)
	case p.Limit < 0:
		return fmt.Errorf("%w: Policy.Limit: expected >= 0 (0 for no limit), found %d", ErrConfig, p.Limit)
	case !p.FailedFrom.IsZero() && !p.FailedBefore.IsZero() && !p.FailedFrom.Before(p.FailedBefore):
		return fmt.Errorf("%w: Policy: expected FailedFrom (%s) before FailedBefore (%s)", ErrConfig,
			p.FailedFrom.UTC().Format(time.RFC3339Nano), p.FailedBefore.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// maxReplays returns MaxReplays, or defaultMaxReplays when it is zero.
func (p Policy) maxReplays() int {
	if p.MaxReplays == 0 {
		return defaultMaxReplays
	}
	return p.MaxReplays
}

// Decide returns what to do with d when replayed letters have been replayed so far. Its order:
// [Stop] once the Limit is reached, then [Skip] for a letter the filters do not select or a
// letter of [ClassLost] (it holds no message to republish, whatever the filters say), then
// [Refuse] for a letter over the replay limit, else [Replay]. It is a pure function of its
// arguments.
func (p Policy) Decide(d DeadLetter, replayed int) Decision {
	if p.Limit > 0 && replayed >= p.Limit {
		return Stop
	}
	if !p.selects(d) || d.LostEnd > 0 || d.ErrorClass == ClassLost {
		return Skip
	}
	if d.ReplayCount >= p.maxReplays() {
		return Refuse
	}
	return Replay
}

func (p Policy) selects(d DeadLetter) bool {
	if !p.FailedFrom.IsZero() || !p.FailedBefore.IsZero() {
		if d.FailedAt.IsZero() {
			return false
		}
		if !p.FailedFrom.IsZero() && d.FailedAt.Before(p.FailedFrom) {
			return false
		}
		if !p.FailedBefore.IsZero() && !d.FailedAt.Before(p.FailedBefore) {
			return false
		}
	}
	return len(p.Classes) == 0 || slices.Contains(p.Classes, d.ErrorClass)
}
