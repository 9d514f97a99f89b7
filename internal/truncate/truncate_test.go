package truncate_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/truncate"
)

func TestMessage(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"0123456789abc", 10, "0123456..."},
		{"héllo wörld", 6, "hé..."}, // é is 2 bytes: "hé" is 3 bytes
		{"日本語テキスト", 8, "日..."},      // never splits a 3-byte rune
		{"anything", 3, "anything"},
		{"anything", 0, "anything"},
	}
	for _, tt := range tests {
		got := truncate.Message(tt.in, tt.max)
		require.Equal(t, tt.want, got, "%q max %d", tt.in, tt.max)
		if tt.max >= 4 {
			require.LessOrEqual(t, len(got), tt.max)
		}
	}
	require.Equal(t, strings.Repeat("a", 4093)+"...", truncate.Message(strings.Repeat("a", 5000), 4096))
}
