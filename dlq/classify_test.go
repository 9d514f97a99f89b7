package dlq_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/dlq"
)

type schemaError struct{ field string }

func (e *schemaError) Error() string      { return "bad field " + e.field }
func (e *schemaError) ErrorClass() string { return "schema" }

type quietError struct{}

func (quietError) Error() string      { return "quiet" }
func (quietError) ErrorClass() string { return "" }

type plainError struct{}

func (plainError) Error() string { return "plain" }

func TestErrorClass(t *testing.T) {
	_, numErr := strconv.Atoi("x")
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"classifier", &schemaError{"delay"}, "schema"},
		{"wrapped classifier", fmt.Errorf("decode: %w", &schemaError{"delay"}), "schema"},
		{"classifier deep in a join", errors.Join(io.EOF, fmt.Errorf("x: %w", &schemaError{"a"})), "schema"},
		{"empty class falls back to the type", quietError{}, "dlq_test.quietError"},
		{"type name", plainError{}, "dlq_test.plainError"},
		{"wrapped type name", fmt.Errorf("decode: %w", numErr), "*strconv.NumError"},
		{"doubly wrapped", fmt.Errorf("a: %w", fmt.Errorf("b: %w", numErr)), "*strconv.NumError"},
		{"multi-wrap takes the first", fmt.Errorf("a: %w %w", plainError{}, numErr), "dlq_test.plainError"},
		{"join takes the first", errors.Join(nil, numErr, plainError{}), "*strconv.NumError"},
		{"sentinel", io.ErrUnexpectedEOF, "*errors.errorString"},
		{"unwrapped Errorf", fmt.Errorf("no cause"), "*errors.errorString"},
		{"context", fmt.Errorf("x: %w", context.DeadlineExceeded), "context.deadlineExceededError"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, dlq.ErrorClass(tt.err))
		})
	}
}

func TestTruncateMessage(t *testing.T) {
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
		got := dlq.TruncateMessage(tt.in, tt.max)
		require.Equal(t, tt.want, got, "%q max %d", tt.in, tt.max)
		if tt.max >= 4 {
			require.LessOrEqual(t, len(got), tt.max)
		}
	}
	require.Equal(t, strings.Repeat("a", 4093)+"...", dlq.TruncateMessage(strings.Repeat("a", 5000), 4096))
}

func TestTopics(t *testing.T) {
	require.Equal(t, "dlq.arrivals", dlq.DefaultTopic("arrivals"))
	for _, ok := range []string{"a", "dlq.arrivals", "A-b_c.9", strings.Repeat("x", 249)} {
		require.NoError(t, dlq.ValidateTopic(ok), ok)
	}
	for _, bad := range []string{"", ".", "..", "a b", "dlq/x", "é", strings.Repeat("x", 250)} {
		err := dlq.ValidateTopic(bad)
		require.ErrorIs(t, err, dlq.ErrInvalid, bad)
		require.Contains(t, err.Error(), "expected", bad)
	}
}
