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
