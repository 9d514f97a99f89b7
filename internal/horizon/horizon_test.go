package horizon_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/horizon"
	"github.com/streamledger/streamledger/sink"
)

func TestResolve(t *testing.T) {
	const day = 24 * time.Hour
	for _, tc := range []struct {
		name         string
		h, retention time.Duration
		want         time.Duration
		err          string
	}{
		{"zero: the default", 0, 0, horizon.Default, ""},
		{"negative: forever", -1, 0, 0, ""},
		{"forever covers a source that keeps records forever", -1, -1, 0, ""},
		{"covers the retention", 8 * day, 7 * day, 8 * day, ""},
		{"equals the retention", 7 * day, 7 * day, 7 * day, ""},
		{"the default against a longer retention", 0, 8 * day, 0, "H 168h0m0s is shorter than R 192h0m0s"},
		{"shorter than the retention", day, 2 * day, 0, "H 24h0m0s is shorter than R 48h0m0s"},
		{"finite against a source that keeps records forever", day, -1, 0, "R is negative (the source keeps records forever): set H negative too"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := horizon.Resolve(tc.h, tc.retention, "H", "R")
			if tc.err != "" {
				require.ErrorIs(t, err, sink.ErrHorizon)
				require.ErrorIs(t, err, sink.ErrConfig)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
