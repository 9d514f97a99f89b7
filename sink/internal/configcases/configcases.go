// Package configcases holds the internal/configtest cases of the fields that the
// configurations of every sink share: the numbers of a sink.AggregateSpec, of a
// sink.RetryPolicy, and the horizon against the source's retention. Each case checks what the
// built sink does, through an accessor the sink's own test passes.
package configcases

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/configtest"
	"github.com/streamledger/streamledger/internal/retry"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/fold"
	"github.com/streamledger/streamledger/sink/internal/merge"
	"github.com/streamledger/streamledger/window"
)

// Built is what a sink or an effect sink built from a configuration works with, for the
// cases to check.
type Built struct {
	// Aggregates is the aggregate spec a sink declares and merges with.
	Aggregates sink.AggregateSpec
	// Pruner prunes a sink's folded windows.
	Pruner *fold.Pruner
	// Prune is an effect sink's Prune.
	Prune func(ctx context.Context) (int64, error)
	// Retry is the policy the sink retries with.
	Retry sink.RetryPolicy
}

// Sink returns the cases of the fields of a SQL sink's Config at their usual paths:
// Aggregates, Horizon, SourceRetention and Retry. built builds the sink from cfg.
func Sink[C any](built func(t *testing.T, cfg C) Built) []configtest.Case[C] {
	cases := Aggregates("Aggregates", func(t *testing.T, cfg C) sink.AggregateSpec { return built(t, cfg).Aggregates })
	cases = append(cases, Horizon("Horizon", "SourceRetention", func(t *testing.T, cfg C) {
		_, due := built(t, cfg).Pruner.Due(time.Now().Add(100 * 365 * 24 * time.Hour))
		assert.False(t, due, "folded windows are never pruned")
	})...)
	return append(cases, Retry("Retry", func(t *testing.T, cfg C) sink.RetryPolicy { return built(t, cfg).Retry })...)
}

// Effects returns the cases of the fields of an effect sink's EffectConfig: Horizon,
// SourceRetention and Retry. built builds the effect sink from cfg; its Prune must not reach
// the database when markers are kept forever.
func Effects[C any](built func(t *testing.T, cfg C) Built) []configtest.Case[C] {
	cases := Horizon("Horizon", "SourceRetention", func(t *testing.T, cfg C) {
		n, err := built(t, cfg).Prune(context.Background())
		require.NoError(t, err, "Prune does not reach the database")
		assert.Zero(t, n, "no marker is pruned")
	})
	return append(cases, Retry("Retry", func(t *testing.T, cfg C) sink.RetryPolicy { return built(t, cfg).Retry })...)
}

// Aggregates returns the cases of the AggregateSpec at path ("Aggregates"): a negative
// Quantile is refused; a negative ExactLimit merges every key as a t-digest. spec returns
// the aggregate spec the sink built from cfg declares and merges with.
func Aggregates[C any](path string, spec func(t *testing.T, cfg C) sink.AggregateSpec) []configtest.Case[C] {
	return []configtest.Case[C]{
		{Field: path + ".Quantile", Refused: true},
		{Field: path + ".ExactLimit", Accepted: func(t *testing.T, cfg C) {
			s := spec(t, cfg)
			parts := make([]*window.Stats, 2)
			for i := range parts {
				var st window.Stats
				require.NoError(t, st.Add(float64(i)))
				b, err := st.MarshalBinary()
				require.NoError(t, err)
				parts[i], err = merge.Decode(s, b)
				require.NoError(t, err)
			}
			m, err := window.Merge(parts...)
			require.NoError(t, err)
			assert.False(t, m.Exact(), "two values merged as a digest: no value is kept exactly")
		}},
	}
}

var errTransient = errors.New("transient")

// Retry returns the cases of the RetryPolicy at path ("Retry"): a negative MaxAttempts makes
// one attempt, a negative InitialBackoff no wait, a negative MaxBackoff no bound on the
// doubling wait. policy returns the policy the sink built from cfg retries with.
func Retry[C any](path string, policy func(t *testing.T, cfg C) sink.RetryPolicy) []configtest.Case[C] {
	return []configtest.Case[C]{
		{Field: path + ".MaxAttempts", Accepted: func(t *testing.T, cfg C) {
			n := 0
			err := retry.Do(context.Background(), policy(t, cfg), "op", func(error) bool { return true },
				func(context.Context, int) error { n++; return errTransient })
			require.ErrorIs(t, err, errTransient)
			assert.Equal(t, 1, n, "one attempt, no retry")
		}},
		{Field: path + ".InitialBackoff", Accepted: func(t *testing.T, cfg C) {
			p := policy(t, cfg)
			for n := 1; n < retry.DefaultMaxAttempts; n++ {
				assert.Zero(t, retry.Backoff(p, n), "no wait after attempt %d", n)
			}
		}},
		{Field: path + ".MaxBackoff", Accepted: func(t *testing.T, cfg C) {
			assert.Equal(t, retry.DefaultInitialBackoff<<9, retry.Backoff(policy(t, cfg), 10),
				"the wait doubles past the default bound of %v", retry.DefaultMaxBackoff)
		}},
	}
}

// Horizon returns the cases of a horizon and the retention it is checked against: a negative
// horizon keeps what it bounds forever, as forever checks; a negative retention, a source that
// keeps records forever, is refused against the default horizon, which is finite.
func Horizon[C any](horizon, retention string, forever func(t *testing.T, cfg C)) []configtest.Case[C] {
	return []configtest.Case[C]{
		{Field: horizon, Accepted: forever},
		{Field: retention, Refused: true},
	}
}
