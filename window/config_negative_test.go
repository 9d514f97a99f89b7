package window_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/configtest"
	"github.com/streamledger/streamledger/window"
)

// Every signed numeric field of Config at -1: New refuses it, naming the field, or the
// field's documented meaning of a negative value holds.
func TestConfigNegativeValues(t *testing.T) {
	build := func(cfg window.Config[string]) error {
		_, err := window.New(cfg)
		return err
	}
	configtest.Negative(t, window.Config[string]{}, window.ErrConfig, build, []configtest.Case[window.Config[string]]{
		{Field: "Size", Refused: true},
		{Field: "ExactLimit", Accepted: func(t *testing.T, cfg window.Config[string]) {
			w, err := window.New(cfg)
			require.NoError(t, err)
			start := time.Date(2024, 5, 1, 8, 0, 0, 0, time.UTC)
			require.NoError(t, w.Add(start, "k", 1))
			parts := w.Close(start.Add(w.Size()))
			require.Len(t, parts, 1)
			assert.False(t, parts[0].Stats.Exact(), "a digest from the first value")
			assert.Zero(t, parts[0].Stats.ExactLimit(), "keeps no value exactly")
		}},
	})
}
