package main

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/ledger/consumer"
)

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  bool
	}{
		{"268435456", 256 << 20, false},
		{"256MiB", 256 << 20, false},
		{" 1 GiB", 1 << 30, false},
		{"64KiB", 64 << 10, false},
		{"-1", -1, false},
		{"0", 0, false},
		{"lots", 0, true},
		{"1.5GiB", 0, true},
	} {
		got, err := parseBytes(tc.in)
		if tc.err {
			assert.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}

// TestRunFlagsTimeouts checks that the shutdown's bound reaches the pipeline's configuration
// from the flags and from the environment, and that zero leaves the runtime's default.
func TestRunFlagsTimeouts(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		env      map[string]string
		shutdown time.Duration
	}{
		{"defaults", nil, nil, 0},
		{"flags", []string{"--shutdown-timeout", "1s"}, nil, time.Second},
		{"environment", nil, map[string]string{"OV_SHUTDOWN_TIMEOUT": "2s"}, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			f, o := newRunFlags(io.Discard)
			require.NoError(t, f.parse(tc.args))
			st, err := o.settings(io.Discard)
			require.NoError(t, err)
			cfg := o.pipelineConfig(st, nil)
			assert.Equal(t, tc.shutdown, cfg.ShutdownTimeout)
		})
	}
}

func TestRunFlagsLostRecords(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want consumer.LostPolicy
		err  string
	}{
		{nil, consumer.LostStop, ""},
		{[]string{"--lost-records", "continue"}, consumer.LostContinue, ""},
		{[]string{"--lost-records", "skip"}, 0, `--lost-records "skip": want stop or continue`},
	} {
		f, o := newRunFlags(io.Discard)
		require.NoError(t, f.parse(tc.args))
		st, err := o.settings(io.Discard)
		if tc.err != "" {
			require.EqualError(t, err, tc.err)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.want, o.pipelineConfig(st, nil).LostRecords)
	}
}
