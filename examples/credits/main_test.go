package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/examples/credits/internal/accounts"
	"github.com/streamledger/streamledger/examples/credits/internal/credit"
	"github.com/streamledger/streamledger/internal/kafkatest"
	"github.com/streamledger/streamledger/internal/pgtest"
)

// The worked example prints the seed's walk-through; everything after its header (broker
// address, schema) is fixed.
func TestWorkedExample(t *testing.T) {
	db := pgtest.New(t)
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"worked-example", "-database", pgtest.URL(), "-schema", db.Schema}, &out, &errOut)
	require.NoError(t, err, errOut.String())
	lines := strings.Split(out.String(), "\n")
	require.Greater(t, len(lines), 4, out.String())
	assert.Equal(t, "The seed's worked example: credit e42 of 10 to account a7, and a crash before the offset commit.", lines[0])
	assert.Contains(t, lines[1], "in-process (kfake)")
	assert.Contains(t, lines[2], db.Schema)
	assert.Equal(t, `
1. Account a7 opens with balance 100; no marker for e42 yet.
   balance a7 = 100, marker e42 absent, entries of e42: 0
2. The credit {"op_id":"e42","account":"a7","amount":10} is produced to partition 0 at offset 0.
3. Consumer 1 (group credits) receives offset 0 and applies e42: one transaction inserts the marker
   and adds 10 to the balance, and commits both. Outcome: applied.
   balance a7 = 110, marker e42 present, entries of e42: 1
4. Consumer 1 crashes after the sink commit, before the offset commit.
   committed offset of group credits on partition 0: none
5. Consumer 2 starts in the same group; the broker redelivers offset 0.
   The marker insert finds e42 already present: outcome duplicate, the credit is not repeated.
6. Consumer 2 commits the offset and stops.
   balance a7 = 110, marker e42 present, entries of e42: 1; committed offset: 1

The balance stays 110: both writes share one transaction, and the marker is still retained.
`+boundary+`
`, strings.Join(lines[3:], "\n"))
}

// The demonstration feed on the in-process broker shows every outcome once.
func TestRunDemonstration(t *testing.T) {
	db := pgtest.New(t)
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"run", "-database", pgtest.URL(), "-schema", db.Schema}, &out, &errOut)
	require.NoError(t, err, errOut.String())
	got := out.String()
	for _, want := range []string{
		"@2 " + demoFeed[2].value, "duplicate",
		"dead-lettered (credit.conflict)",
		"dead-lettered (credit.unknown_account)",
		"dead-lettered (credit.amount)",
		"dead-lettered (credit.malformed)",
		"applied 3, duplicates 2, dead-lettered 4 (to dlq.credits)\n",
		"balances: a1 = 125, a2 = 112; markers: [d1 d2 d6]\n",
	} {
		assert.Contains(t, got, want)
	}
	assert.Empty(t, errOut.String(), "no warnings")
}

// run with -brokers consumes from that cluster until interrupted, with the topic's retention
// read from the broker, and shuts down gracefully.
func TestRunAgainstABroker(t *testing.T) {
	db := pgtest.New(t)
	kc := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"credits": 1, "dlq.credits": 1}})
	kc.Produce(t,
		&kafkatest.Record{Topic: "credits", Value: credit.Credit{ID: "x1", Account: "acc", Amount: 5}.Payload()},
		&kafkatest.Record{Topic: "credits", Value: credit.Credit{ID: "x1", Account: "acc", Amount: 5}.Payload()},
		&kafkatest.Record{Topic: "credits", Value: []byte("garbage")},
		&kafkatest.Record{Topic: "credits", Value: credit.Credit{ID: "x2", Account: "acc", Amount: 6}.Payload()},
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"run", "-brokers", kc.Addr(), "-database", pgtest.URL(), "-schema", db.Schema,
			"-open", "acc=1000", "-commit-interval", "10ms", "-horizon", "720h"}, &out, &errOut)
	}()
	require.Eventually(t, func() bool { return kc.Committed(t, "credits", "credits")[0].Offset == 4 }, kafkatest.Timeout, 10*time.Millisecond, errOut.String())
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err, errOut.String())
	case <-time.After(kafkatest.Timeout):
		t.Fatal("run did not stop")
	}
	st, err := accounts.NewPostgres(db.Pool, accounts.Config{Schema: db.Schema})
	require.NoError(t, err)
	bal, ok, err := st.Balance(context.Background(), "acc")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, int64(1011), bal)
	assert.Contains(t, errOut.String(), "source_retention=168h0m0s", "read from the broker")
	assert.Len(t, kc.ReadAll(t, "dlq.credits"), 1)

	// A horizon shorter than the topic's retention is refused before anything is consumed.
	err = run(context.Background(), []string{"run", "-brokers", kc.Addr(), "-database", pgtest.URL(), "-schema", db.Schema, "-horizon", "24h"}, &out, &errOut)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "horizon shorter than the source's retention")
}

func TestUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.ErrorIs(t, run(context.Background(), nil, &out, &errOut), errUsage)
	assert.Contains(t, errOut.String(), "credits worked-example")
	assert.ErrorIs(t, run(context.Background(), []string{"frobnicate"}, &out, &errOut), errUsage)
	assert.NoError(t, run(context.Background(), []string{"help"}, &out, &errOut))
	assert.True(t, errors.Is(run(context.Background(), []string{"run", "-h"}, &out, &errOut), flag.ErrHelp))
	assert.Error(t, run(context.Background(), []string{"run", "-open", "a1"}, &out, &errOut))
	assert.ErrorIs(t, run(context.Background(), []string{"worked-example", "extra"}, &out, &errOut), errUsage)
}

func TestParseAccounts(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []account
		bad  bool
	}{
		{in: "", want: nil},
		{in: "a1=100", want: []account{{"a1", 100}}},
		{in: " a1=100, a2=-5 ,", want: []account{{"a1", 100}, {"a2", -5}}},
		{in: "a1", bad: true},
		{in: "=5", bad: true},
		{in: "a1=x", bad: true},
	} {
		got, err := parseAccounts(tc.in)
		if tc.bad {
			assert.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// credits bench on a small feed: every run through the real client, the in-process broker
// and Postgres matches the feed's independent count, and the table has a row per batch size,
// the replay and the paced latency.
func TestBench(t *testing.T) {
	pgtest.New(t) // skips without a server
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"bench", "-database", pgtest.URL(), "-credits", "3000", "-accounts", "100",
		"-partitions", "2", "-batches", "16,512", "-paced-rate", "1000", "-paced-for", "1s"}, &out, &errOut)
	require.NoError(t, err, errOut.String())
	got := out.String()
	for _, want := range []string{"3000 credits over 100 accounts, 2 partitions", "batch 16", "batch 512", "replay", "paced: 1000 credits at 1000/s"} {
		assert.Contains(t, got, want)
	}
	assert.Len(t, regexp.MustCompile(`(?m)\strue\s*$`).FindAllString(got, -1), 3, "three runs verified:\n%s", got)
	assert.NotContains(t, got, "false")
}
