package mysql_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/mytest"
	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/mysql"
)

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// fastRetry keeps retry tests quick while still backing off.
var fastRetry = sink.RetryPolicy{MaxAttempts: 8, InitialBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond}

// newSink returns a migrated sink on a private database, configured like the conformance
// suite's setup, with adjust applied to its config.
func newSink(t testing.TB, adjust func(*mysql.Config)) (*mysql.Sink, *mytest.DB) {
	t.Helper()
	db := mytest.New(t)
	cfg := mysql.Config{Aggregates: sinkfixture.Aggregates(), States: sinkfixture.States(), Clock: sinkfixture.Now, Retry: fastRetry}
	if adjust != nil {
		adjust(&cfg)
	}
	s, err := mysql.New(db.DB, cfg)
	require.NoError(t, err)
	require.NoError(t, s.Migrate(testCtx(t)))
	return s, db
}
