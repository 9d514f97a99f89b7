package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/ledger/consumer"
)

// /healthz tells a healthy processor from one that holds no partition and one whose writes
// are stalled: 200 for the first, 503 with the reason for the others.
func TestHealthz(t *testing.T) {
	for _, tc := range []struct {
		health consumer.Health
		code   int
		first  string
	}{
		{consumer.Health{State: consumer.Healthy, Partitions: 6, SinceAssignment: time.Minute}, http.StatusOK, "healthy"},
		{consumer.Health{State: consumer.HealthStarting}, http.StatusOK, "starting"},
		{consumer.Health{State: consumer.HealthNoAssignment, Unassigned: 3 * time.Minute}, http.StatusServiceUnavailable, "no assignment"},
		{consumer.Health{State: consumer.HealthStalledWrites, Partitions: 6, Stalled: time.Minute}, http.StatusServiceUnavailable, "stalled writes"},
		{consumer.Health{State: consumer.HealthStopped}, http.StatusServiceUnavailable, "stopped"},
	} {
		t.Run(tc.first, func(t *testing.T) {
			rec := httptest.NewRecorder()
			healthz(func() consumer.Health { return tc.health })(rec, httptest.NewRequest("GET", "/healthz", nil))
			res := rec.Result()
			body, err := io.ReadAll(res.Body)
			require.NoError(t, err)
			assert.Equal(t, tc.code, res.StatusCode)
			assert.Regexp(t, "^"+tc.first+"\npartitions ", string(body))
		})
	}
}
