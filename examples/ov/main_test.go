package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/examples/ov/feed"
	"github.com/streamledger/streamledger/internal/kafkatest"
	"github.com/streamledger/streamledger/internal/pgtest"
)

func TestUsage(t *testing.T) {
	var out, errb bytes.Buffer
	assert.Equal(t, 2, realMain(nil, &out, &errb))
	assert.Contains(t, out.String(), "ov demo")
	assert.Contains(t, out.String(), "bench")
	assert.Equal(t, 0, realMain([]string{"help"}, &out, &errb))
	errb.Reset()
	assert.Equal(t, 2, realMain([]string{"bench", "--cases", "p99-1x"}, &out, &errb))
	assert.Contains(t, errb.String(), `no case selected by --cases "p99-1x"`)
	errb.Reset()
	assert.Equal(t, 2, realMain([]string{"bench", "--sizes", "0"}, &out, &errb))
	assert.Contains(t, errb.String(), "--sizes")
	errb.Reset()
	assert.Equal(t, 2, realMain([]string{"nosuch"}, &out, &errb))
	assert.Contains(t, errb.String(), `unknown command "nosuch"`)
	errb.Reset()
	assert.Equal(t, 2, realMain([]string{"run", "--no-such-flag"}, &out, &errb))
	assert.Contains(t, errb.String(), "no-such-flag")
	errb.Reset()
	assert.Equal(t, 0, realMain([]string{"feed", "-h"}, &out, &errb))
	assert.Contains(t, errb.String(), "--from")

	t.Setenv("OV_WINDOW", "five minutes")
	errb.Reset()
	assert.Equal(t, 2, realMain([]string{"run"}, &out, &errb))
	assert.Contains(t, errb.String(), "$OV_WINDOW")
}

func TestParseHelpers(t *testing.T) {
	b, err := parseBox("50.75,53.7,3.2,7.22")
	require.NoError(t, err)
	assert.Equal(t, "50.75,53.7,3.2,7.22", formatBox(b))
	_, err = parseBox("1,2,3")
	assert.Error(t, err)
	st, err := parseStart("07:30", feed.DefaultStart())
	require.NoError(t, err)
	assert.Equal(t, "2026-03-10T07:30:00+01:00", st.Format(time.RFC3339))
	_, err = parseStart("half past seven", feed.DefaultStart())
	assert.Error(t, err)
	assert.Equal(t, "postgres://u:xxxxx@h/db", redactDSN("postgres://u:secret@h/db"))
	assert.Equal(t, "1,234,567", count(1234567))
	assert.Equal(t, "-1,000", count(-1000))
	assert.Equal(t, "12", count(12))
}

// TestFeedFile writes a feed to a file and replays the file to another: the bytes are the same.
func TestFeedFile(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	var out, errb bytes.Buffer
	args := []string{"feed", "--scale", "0.02", "--duration", "10m", "--start", "08:00", "--malformed-share", "0.05", "--out"}
	require.Equal(t, 0, realMain(append(args, a), &out, &errb), errb.String())
	assert.Contains(t, errb.String(), "records up to")
	require.Equal(t, 0, realMain([]string{"feed", "--from", a, "--out", b}, &out, &errb), errb.String())
	ab, err := os.ReadFile(a)
	require.NoError(t, err)
	bb, err := os.ReadFile(b)
	require.NoError(t, err)
	assert.Equal(t, ab, bb)
	recs, err := feed.ReadAll(bytes.NewReader(ab))
	require.NoError(t, err)
	want, _, err := feed.Generate(feed.Config{Seed: 1, Scale: 0.02, Duration: 10 * time.Minute,
		Start: time.Date(2026, 3, 10, 8, 0, 0, 0, feed.CET()), DisorderShare: feed.SuggestedDisorderShare,
		LateShare: feed.SuggestedLateShare, MalformedShare: 0.05})
	require.NoError(t, err)
	assert.Equal(t, want, recs, "the command writes exactly what the library generates")
}

// syncBuffer is a bytes.Buffer safe for a command writing while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRunFeedReplay drives the commands against an in-process broker and the real Postgres:
// feed produces, run processes (serving /healthz and /metrics), replay-dlq --dry-run lists
// the dead letters.
func TestRunFeedReplay(t *testing.T) {
	db := pgtest.New(t)
	topics := map[string]int32{}
	for _, tp := range []string{feed.DefaultPositionsTopic, feed.DefaultPredictionsTopic} {
		topics[tp], topics[dlq.DefaultTopic(tp)] = 3, 3
	}
	cluster := kafkatest.Start(t, kafkatest.Config{Topics: topics})
	brokers := cluster.Addr()

	var out, errb bytes.Buffer
	require.Equal(t, 0, realMain([]string{"feed", "--brokers", brokers, "--scale", "0.02", "--duration", "20m", "--start", "08:00",
		"--malformed-share", "0.02"}, &out, &errb), errb.String())
	m := regexp.MustCompile(`broker confirmed (\d+) records, 0 failed`).FindStringSubmatch(errb.String())
	require.NotNil(t, m, errb.String())
	produced, _ := strconv.Atoi(m[1])
	require.Positive(t, produced)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- runProcessor(ctx, []string{"--brokers", brokers, "--dsn", pgtest.URL(), "--schema", db.Schema, "--flush-interval", "200ms",
			"--metrics-addr", "127.0.0.1:0", "--group", "ov-cmd-test"}, io.Discard, logs)
	}()
	var addr string
	require.Eventually(t, func() bool {
		m := regexp.MustCompile(`msg="serving /metrics and /healthz" addr=(\S+)`).FindStringSubmatch(logs.String())
		if m != nil {
			addr = m[1]
		}
		return addr != ""
	}, 30*time.Second, 50*time.Millisecond, "the metrics endpoint did not start: %s", logs.String())

	resp, err := http.Get("http://" + addr + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	consumed := func() (n int) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return -1
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "processor_consumed_total{") {
				v, _ := strconv.ParseFloat(sc.Text()[strings.LastIndex(sc.Text(), " ")+1:], 64)
				n += int(v)
			}
		}
		return n
	}
	require.Eventually(t, func() bool { return consumed() == produced }, time.Minute, 100*time.Millisecond)
	body := metricsText(t, addr)
	for _, name := range []string{"processor_uncommitted_messages", "processor_consumed_total", "processor_decode_errors_total",
		"processor_late_events_total", "processor_commits_total", "processor_consumer_lag", "processor_open_windows"} {
		assert.Contains(t, body, "\n"+name, "metric %s", name)
	}
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("run did not stop")
	}
	assert.Contains(t, logs.String(), "processor stopped")

	var rows int
	require.NoError(t, db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM delay_aggregates").Scan(&rows))
	assert.Positive(t, rows)

	out.Reset()
	errb.Reset()
	require.Equal(t, 0, realMain([]string{"replay-dlq", "--brokers", brokers, "--dry-run"}, &out, &errb), errb.String())
	letters := 0
	for _, m := range regexp.MustCompile(`(\d+) dead letters: would replay (\d+)`).FindAllStringSubmatch(out.String(), -1) {
		n, _ := strconv.Atoi(m[1])
		letters += n
		assert.Equal(t, m[1], m[2])
	}
	dead := 0
	for _, tp := range []string{feed.DefaultPositionsTopic, feed.DefaultPredictionsTopic} {
		dead += len(cluster.ReadAll(t, dlq.DefaultTopic(tp)))
	}
	assert.Positive(t, dead)
	assert.Equal(t, dead, letters, out.String())
}

func metricsText(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return "\n" + string(b)
}

// TestDemo runs a short demo end to end and checks its report.
func TestDemo(t *testing.T) {
	db := pgtest.New(t) // the demo drops and recreates the schema; pgtest drops it at the end
	var out bytes.Buffer
	err := runDemo(context.Background(), []string{"--dsn", pgtest.URL(), "--schema", db.Schema, "--scale", "0.02",
		"--duration", "25m", "--speed", "600", "--flush-interval", "200ms", "--partitions", "3", "--malformed-share", "0.01"}, &out, io.Discard)
	require.NoError(t, err, out.String())
	report := out.String()
	t.Log(report)
	m := regexp.MustCompile(`consumed\s+([\d,]+) = admitted ([\d,]+) \+ late ([\d,]+) \+ dead-lettered ([\d,]+)  \(adds up\)`).FindStringSubmatch(report)
	require.NotNil(t, m, "the counts add up")
	p := regexp.MustCompile(`produced\s+([\d,]+) records`).FindStringSubmatch(report)
	require.NotNil(t, p)
	assert.Equal(t, p[1], m[1], "every produced record was consumed")
	assert.Contains(t, report, "Last complete window:")
	assert.Contains(t, report, "Most delayed lines")
	assert.Contains(t, report, "Most delayed stations")
	assert.Contains(t, report, fmt.Sprintf("FROM %s.delay_aggregates", db.Schema))
}
