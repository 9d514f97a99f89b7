package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
