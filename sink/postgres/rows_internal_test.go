package postgres

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestTypedColumn(t *testing.T) {
	at := time.Date(2026, 3, 2, 7, 0, 0, 0, time.UTC)
	s := "x"
	for name, tc := range map[string]struct {
		in   []any
		want any
	}{
		"strings":         {[]any{"a", "b"}, []string{"a", "b"}},
		"strings and nil": {[]any{nil, "x"}, []*string{nil, &s}},
		"int64":           {[]any{int64(1), int64(2)}, []int64{1, 2}},
		"float64":         {[]any{1.5}, []float64{1.5}},
		"times":           {[]any{at}, []time.Time{at}},
		"mixed types":     {[]any{"a", int64(1)}, []any{"a", int64(1)}},
		"all nil":         {[]any{nil, nil}, []any{nil, nil}},
		"other type":      {[]any{[]byte("b")}, []any{[]byte("b")}},
	} {
		assert.Equal(t, tc.want, typedColumn(tc.in), name)
	}
}
