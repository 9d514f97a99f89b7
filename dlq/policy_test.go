package dlq_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/internal/configtest"
)

func letter(class string, failed time.Time, replays int) dlq.DeadLetter {
	return dlq.DeadLetter{Record: dlq.Record{Topic: "t"}, ErrorClass: class, FailedAt: failed, ReplayCount: replays}
}

func TestPolicyDecide(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		p        dlq.Policy
		d        dlq.DeadLetter
		replayed int
		want     dlq.Decision
	}{
		{"zero policy replays", dlq.Policy{}, letter("x", t0, 0), 0, dlq.Replay},
		{"zero policy refuses at the default limit", dlq.Policy{}, letter("x", t0, 3), 0, dlq.Refuse},
		{"below the default limit", dlq.Policy{}, letter("x", t0, 3-1), 0, dlq.Replay},
		{"custom limit", dlq.Policy{MaxReplays: 1}, letter("x", t0, 1), 0, dlq.Refuse},
		{"custom limit not reached", dlq.Policy{MaxReplays: 5}, letter("x", t0, 4), 0, dlq.Replay},
		{"class selected", dlq.Policy{Classes: []string{"a", "x"}}, letter("x", t0, 0), 0, dlq.Replay},
		{"class not selected", dlq.Policy{Classes: []string{"a"}}, letter("x", t0, 0), 0, dlq.Skip},
		{"filtered beats refused", dlq.Policy{Classes: []string{"a"}}, letter("x", t0, 9), 0, dlq.Skip},
		{"from is inclusive", dlq.Policy{FailedFrom: t0}, letter("x", t0, 0), 0, dlq.Replay},
		{"before from", dlq.Policy{FailedFrom: t0}, letter("x", t0.Add(-1), 0), 0, dlq.Skip},
		{"before is exclusive", dlq.Policy{FailedBefore: t0}, letter("x", t0, 0), 0, dlq.Skip},
		{"before before", dlq.Policy{FailedBefore: t0}, letter("x", t0.Add(-1), 0), 0, dlq.Replay},
		{"unknown failure time with a bound", dlq.Policy{FailedFrom: t0}, letter("x", time.Time{}, 0), 0, dlq.Skip},
		{"unknown failure time without bounds", dlq.Policy{}, letter("x", time.Time{}, 0), 0, dlq.Replay},
		{"limit not reached", dlq.Policy{Limit: 2}, letter("x", t0, 0), 1, dlq.Replay},
		{"limit reached", dlq.Policy{Limit: 2}, letter("x", t0, 0), 2, dlq.Stop},
		{"limit reached beats skip", dlq.Policy{Limit: 1, Classes: []string{"a"}}, letter("x", t0, 0), 1, dlq.Stop},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, tt.p.Validate())
			require.Equal(t, tt.want, tt.p.Decide(tt.d, tt.replayed))
		})
	}
}

func TestPolicyValidate(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)
	for name, p := range map[string]dlq.Policy{
		"negative max replays": {MaxReplays: -1},
		"negative limit":       {Limit: -1},
		"empty time range":     {FailedFrom: t0, FailedBefore: t0},
		"reversed time range":  {FailedFrom: t0, FailedBefore: t0.Add(-time.Second)},
	} {
		t.Run(name, func(t *testing.T) {
			err := p.Validate()
			require.ErrorIs(t, err, dlq.ErrConfig)
			require.Contains(t, err.Error(), "expected")
		})
	}
}

// Every signed numeric field of Policy at -1 is refused, naming the field: a replay needs a
// limit on replays, and a negative Limit means nothing.
func TestPolicyNegativeValues(t *testing.T) {
	configtest.Negative(t, dlq.Policy{}, dlq.ErrConfig, dlq.Policy.Validate, []configtest.Case[dlq.Policy]{
		{Field: "MaxReplays", Refused: true},
		{Field: "Limit", Refused: true},
	})
}

func TestDecisionString(t *testing.T) {
	require.Equal(t, "replay", dlq.Replay.String())
	require.Equal(t, "skip", dlq.Skip.String())
	require.Equal(t, "refuse", dlq.Refuse.String())
	require.Equal(t, "stop", dlq.Stop.String())
	require.Equal(t, "Decision(0)", dlq.Decision(0).String())
	require.Equal(t, "Decision(200)", dlq.Decision(200).String())
}

func BenchmarkPolicyDecide(b *testing.B) {
	t0 := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)
	p := dlq.Policy{FailedFrom: t0, FailedBefore: t0.Add(time.Hour), Classes: []string{"a", "b", "schema"}, Limit: 1 << 30}
	d := letter("schema", t0.Add(time.Minute), 1)
	b.ReportAllocs()
	for b.Loop() {
		if p.Decide(d, 7) != dlq.Replay {
			b.Fatal("wrong decision")
		}
	}
}
