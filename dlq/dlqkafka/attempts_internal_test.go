package dlqkafka

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestAttempts(t *testing.T) {
	for _, tc := range []struct {
		name        string
		n           int
		backoff     time.Duration
		wantN       int
		wantBackoff time.Duration
	}{
		{"zero: the defaults", 0, 0, DefaultMaxAttempts, DefaultRetryBackoff},
		{"set", 3, time.Second, 3, time.Second},
		{"negative: one attempt, no wait", -1, -1, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, backoff := attempts(tc.n, tc.backoff)
			assert.Equal(t, tc.wantN, n)
			assert.Equal(t, tc.wantBackoff, backoff)
		})
	}
}
