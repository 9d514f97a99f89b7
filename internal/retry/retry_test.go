package retry_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/retry"
	"github.com/streamledger/streamledger/sink"
)

var (
	errTransient = errors.New("transient")
	errPermanent = errors.New("permanent")
)

func isTransient(err error) bool { return errors.Is(err, errTransient) }

func TestDo(t *testing.T) {
	p := sink.RetryPolicy{MaxAttempts: 4, InitialBackoff: time.Microsecond, MaxBackoff: time.Microsecond}
	for _, tc := range []struct {
		name      string
		results   []error
		attempts  int
		ok        bool
		transient bool
	}{
		{"first attempt", []error{nil}, 1, true, false},
		{"after transient failures", []error{errTransient, errTransient, nil}, 3, true, false},
		{"permanent at once", []error{errPermanent, nil}, 1, false, false},
		{"transient then permanent", []error{errTransient, errPermanent}, 2, false, false},
		{"attempts run out", []error{errTransient, errTransient, errTransient, errTransient, nil}, 4, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			err := retry.Do(context.Background(), p, "op", isTransient, func(_ context.Context, i int) error {
				n++
				assert.Equal(t, n, i)
				return tc.results[i-1]
			})
			assert.Equal(t, tc.attempts, n)
			if tc.ok {
				require.NoError(t, err)
				return
			}
			var we *sink.WriteError
			require.ErrorAs(t, err, &we)
			assert.Equal(t, "op", we.Op)
			assert.Equal(t, tc.attempts, we.Attempts)
			assert.Equal(t, tc.transient, we.Transient)
			assert.Equal(t, tc.transient, sink.IsTransient(err))
			assert.ErrorIs(t, err, tc.results[tc.attempts-1])
		})
	}
}

func TestDoHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := sink.RetryPolicy{MaxAttempts: 10, InitialBackoff: time.Hour}
	n := 0
	err := retry.Do(ctx, p, "op", isTransient, func(context.Context, int) error {
		n++
		cancel()
		return errTransient
	})
	assert.Equal(t, 1, n)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, errTransient)
	assert.True(t, sink.IsTransient(err))

	n = 0
	err = retry.Do(ctx, p, "op", isTransient, func(context.Context, int) error { n++; return nil })
	assert.Zero(t, n, "an ended context makes no attempt")
	assert.ErrorIs(t, err, context.Canceled)
}

func TestBackoff(t *testing.T) {
	p := sink.RetryPolicy{InitialBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}
	var got []time.Duration
	for n := 1; n <= 5; n++ {
		got = append(got, retry.Backoff(p, n))
	}
	assert.Equal(t, []time.Duration{10e6, 20e6, 40e6, 50e6, 50e6}, got)
	d := retry.Resolve(sink.RetryPolicy{})
	assert.Equal(t, sink.RetryPolicy{MaxAttempts: 5, InitialBackoff: 50 * time.Millisecond, MaxBackoff: 2 * time.Second}, d)
}

func TestNegativeMeansOff(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    sink.RetryPolicy
		want []time.Duration // Backoff(1..4)
		max  int
	}{
		{"no retries", sink.RetryPolicy{MaxAttempts: -1}, []time.Duration{50e6, 100e6, 200e6, 400e6}, 1},
		{"no wait", sink.RetryPolicy{InitialBackoff: -1}, []time.Duration{0, 0, 0, 0}, 5},
		{"no longest wait", sink.RetryPolicy{InitialBackoff: time.Hour, MaxBackoff: -1},
			[]time.Duration{time.Hour, 2 * time.Hour, 4 * time.Hour, 8 * time.Hour}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []time.Duration
			for n := 1; n <= 4; n++ {
				got = append(got, retry.Backoff(tc.p, n))
			}
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.max, retry.Resolve(tc.p).MaxAttempts)
			resolved := retry.Resolve(tc.p)
			assert.Equal(t, resolved, retry.Resolve(resolved), "resolving again changes nothing")
			for n := 1; n <= 4; n++ {
				assert.Equal(t, tc.want[n-1], retry.Backoff(resolved, n), "the resolved policy waits the same")
			}
			assert.GreaterOrEqual(t, retry.Backoff(tc.p, 100), tc.want[3], "never overflows (2^99 hours is past MaxInt64)")
		})
	}
}

func ExampleBackoff() {
	p := sink.RetryPolicy{MaxAttempts: 5, InitialBackoff: 50 * time.Millisecond, MaxBackoff: 300 * time.Millisecond}
	for n := 1; n < p.MaxAttempts; n++ {
		fmt.Println(retry.Backoff(p, n))
	}
	// Output:
	// 50ms
	// 100ms
	// 200ms
	// 300ms
}
