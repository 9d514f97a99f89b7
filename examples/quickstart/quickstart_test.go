package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/kafkatest"
	"github.com/streamledger/streamledger/internal/pgtest"
)

// TestREADMEShowsThisProgram keeps the README's consumer program and this one the same, so that
// what a reader copies is what the end-to-end test below runs.
func TestREADMEShowsThisProgram(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	program, err := os.ReadFile("main.go")
	require.NoError(t, err)
	start := bytes.Index(readme, []byte("```go\n// Command quickstart"))
	require.GreaterOrEqual(t, start, 0, "README.md has no Go block starting with the quickstart's comment")
	block := readme[start+len("```go\n"):]
	end := bytes.Index(block, []byte("\n```\n"))
	require.GreaterOrEqual(t, end, 0, "the README's Go block is not closed")
	assert.Equal(t, string(program), string(block[:end+1]), "README.md's program differs from examples/quickstart/main.go")
}

// TestQuickstart runs the program against an in-process broker and a database of its own:
// it writes the windows the watermark closed, dead-letters the malformed message, and on
// SIGINT commits and exits 0.
func TestQuickstart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the program")
	}
	cluster := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"page-views": 2, "dlq.page-views": 2}})
	dbURL := newDatabase(t)
	bin := filepath.Join(t.TempDir(), "quickstart")
	build := exec.Command("go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	base := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	views := []struct {
		partition int32
		page      string
		ms        float64
		at        time.Duration
	}{
		{0, "/home", 120, 1 * time.Minute}, {1, "/home", 80, 2 * time.Minute}, {0, "/cart", 300, 3 * time.Minute},
		{1, "/home", 100, 6 * time.Minute}, {0, "/home", 140, 7 * time.Minute},
		{0, "/cart", 1, 20 * time.Minute}, {1, "/cart", 1, 20 * time.Minute}, // move both watermarks past 10:10
	}
	var recs []*kafkatest.Record
	for _, v := range views {
		value := fmt.Sprintf(`{"page":%q,"load_ms":%v,"at":%q}`, v.page, v.ms, base.Add(v.at).Format(time.RFC3339))
		recs = append(recs, &kafkatest.Record{Topic: "page-views", Partition: v.partition, Value: []byte(value)})
	}
	recs = append(recs, &kafkatest.Record{Topic: "page-views", Partition: 1, Value: []byte("not json")})
	cluster.Produce(t, recs...)

	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "BROKERS="+cluster.Addr(), "DATABASE_URL="+dbURL)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	want := []string{
		"2026-03-02 10:00 /cart: 1 300.0 300 300", "2026-03-02 10:00 /home: 2 100.0 120 80",
		"2026-03-02 10:05 /home: 2 120.0 140 100",
	}
	var got []string
	require.Eventually(t, func() bool {
		got = rows(t, dbURL)
		return len(got) >= len(want)
	}, 60*time.Second, 200*time.Millisecond, "rows: %v\nlogs:\n%s", got, &logs)
	assert.Equal(t, want, got)

	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	select {
	case err := <-exited:
		require.NoError(t, err, "logs:\n%s", &logs)
	case <-time.After(60 * time.Second):
		t.Fatalf("the program did not exit within 60 s of SIGINT; logs:\n%s", &logs)
	}
	letters := cluster.ReadAll(t, "dlq.page-views")
	require.Len(t, letters, 1)
	assert.Equal(t, "not json", string(letters[0].Value))
	assert.Equal(t, int32(1), letters[0].Partition, "a dead letter keeps its partition")
}

// rows reads the merged rows of the program's table, one line each.
func rows(t *testing.T, dbURL string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var exists bool
	require.NoError(t, conn.QueryRow(ctx, "SELECT to_regclass('public.page_load') IS NOT NULL").Scan(&exists))
	if !exists {
		return nil
	}
	rs, err := conn.Query(ctx, `SELECT window_start, dimension_id, event_count, mean_value, max_value, min_value
		FROM page_load ORDER BY window_start, dimension_id`)
	require.NoError(t, err)
	var out []string
	for rs.Next() {
		var (
			start          time.Time
			page           string
			count          int64
			mean, max, min float64
		)
		require.NoError(t, rs.Scan(&start, &page, &count, &mean, &max, &min))
		out = append(out, fmt.Sprintf("%s %s: %d %.1f %v %v", start.UTC().Format("2006-01-02 15:04"), page, count, mean, max, min))
	}
	require.NoError(t, rs.Err())
	return out
}

// newDatabase creates a database of its own on the test server (the program writes to its
// public schema) and drops it when the test ends.
func newDatabase(t *testing.T) string {
	t.Helper()
	admin := pgtest.URL()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("postgres at %s: %v", admin, err)
		}
		t.Skipf("postgres unreachable (%v); set DATABASE_URL", err)
	}
	defer conn.Close(ctx)
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	name := "quickstart_" + hex.EncodeToString(suffix[:])
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err == nil {
			_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
			_ = conn.Close(ctx)
		}
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(admin)
	require.NoError(t, err)
	u.Path = "/" + name
	return strings.TrimSpace(u.String())
}
