package postgres_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/pgtest"
	"github.com/streamledger/streamledger/internal/sinkfixture"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/postgres"
)

// TestMain keeps the examples, which cannot skip, from failing where no server runs: the
// tests themselves skip through pgtest (or fail, with CI=true).
func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv("CI") != "true" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn, err := pgx.Connect(ctx, pgtest.URL())
		cancel()
		if err != nil {
			fmt.Fprintf(os.Stderr, "Postgres unreachable (%v): examples not run, tests skip\n", err)
			if f := flag.Lookup("test.run"); f != nil && f.Value.String() == "" {
				_ = f.Value.Set("^Test")
			}
		} else {
			_ = conn.Close(context.Background())
		}
	}
	os.Exit(m.Run())
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// fastRetry keeps retry tests quick while still backing off.
var fastRetry = sink.RetryPolicy{MaxAttempts: 5, InitialBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond}

// newSink returns a migrated sink on a private schema, configured like the conformance
// suite's setup, with adjust applied to its config.
func newSink(t testing.TB, adjust func(*postgres.Config)) (*postgres.Sink, *pgtest.DB) {
	t.Helper()
	db := pgtest.New(t)
	s := newSinkOn(t, db, adjust)
	return s, db
}

func newSinkOn(t testing.TB, db *pgtest.DB, adjust func(*postgres.Config)) *postgres.Sink {
	t.Helper()
	cfg := postgres.Config{Schema: db.Schema, Aggregates: sinkfixture.Aggregates(), States: sinkfixture.States(), Clock: sinkfixture.Now, Retry: fastRetry}
	if adjust != nil {
		adjust(&cfg)
	}
	s, err := postgres.New(db.Pool, cfg)
	require.NoError(t, err)
	require.NoError(t, s.Migrate(testCtx(t)))
	return s
}

// tableRows returns rows, each addressed to table.
func tableRows(table string, rows []sink.StateRow) []sink.StateRow {
	out := make([]sink.StateRow, len(rows))
	for i, r := range rows {
		r.Table = table
		out[i] = r
	}
	return out
}
