package service_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/dlq/dlqkafka"
	"github.com/streamledger/streamledger/examples/credits/internal/accounts"
	"github.com/streamledger/streamledger/examples/credits/internal/credit"
	"github.com/streamledger/streamledger/examples/credits/internal/service"
	"github.com/streamledger/streamledger/internal/kafkatest"
	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/sink"
)

const topic = "credits"

// env is one test's broker, database and dead-letter producer.
type env struct {
	t     *testing.T
	kc    *kafkatest.Cluster
	db    database
	dl    *dlqkafka.Producer
	store accounts.Store
}

// newEnv returns an environment on Postgres.
func newEnv(t *testing.T, partitions int32) *env {
	t.Helper()
	return newEnvOn(t, "postgres", partitions)
}

// newEnvOn returns an environment on the database named (see databases).
func newEnvOn(t *testing.T, database string, partitions int32) *env {
	t.Helper()
	db := openDatabase(t, database)
	kc := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{topic: partitions, dlq.DefaultTopic(topic): partitions}})
	dl, err := dlqkafka.NewProducer(dlqkafka.Config{
		Kafka: kc.ConfigMap(kafka.ConfigMap{"linger.ms": 0}), ConsumerID: "credits-test",
		Retry: sink.RetryPolicy{InitialBackoff: 20 * time.Millisecond},
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), kafkatest.Timeout)
		defer cancel()
		_ = dl.Close(ctx)
	})
	e := &env{t: t, kc: kc, db: db, dl: dl}
	svc, err := service.New(e.config("migrate"))
	require.NoError(t, err)
	require.NoError(t, svc.Migrate(context.Background()))
	e.store = svc.Store()
	return e
}

// config is the configuration of a test consumer of group: fast group protocol, a commit
// after every message, no background pruning.
func (e *env) config(group string) service.Config {
	cfg := service.Config{
		Kafka: e.kc.ConfigMap(kafka.ConfigMap{
			"group.id":              group,
			"session.timeout.ms":    6000,
			"heartbeat.interval.ms": 100,
			"fetch.wait.max.ms":     20,
		}),
		Topic:           topic,
		DeadLetters:     e.dl,
		CommitInterval:  service.EveryMessage,
		PruneInterval:   -1,
		ShutdownTimeout: kafkatest.Timeout,
	}
	e.db.configure(&cfg)
	return cfg
}

// open opens accounts with their balances.
func (e *env) open(balances map[string]int64) {
	e.t.Helper()
	for acct, bal := range balances {
		_, err := e.store.Open(context.Background(), acct, bal)
		require.NoError(e.t, err)
	}
}

// produce writes each credit as JSON to the partition given, in order, and returns the
// records with their offsets.
func (e *env) produce(partition int32, cs ...credit.Credit) []*kafkatest.Record {
	e.t.Helper()
	recs := make([]*kafkatest.Record, len(cs))
	for i, c := range cs {
		recs[i] = &kafkatest.Record{Topic: topic, Partition: partition, Key: []byte(c.Account), Value: c.Payload()}
	}
	e.kc.Produce(e.t, recs...)
	return recs
}

func (e *env) produceRaw(partition int32, values ...string) []*kafkatest.Record {
	e.t.Helper()
	recs := make([]*kafkatest.Record, len(values))
	for i, v := range values {
		recs[i] = &kafkatest.Record{Topic: topic, Partition: partition, Value: []byte(v)}
	}
	e.kc.Produce(e.t, recs...)
	return recs
}

// committed returns group's committed offset of each partition of the credits topic (-1:
// none).
func (e *env) committed(group string, partitions int32) []int64 {
	e.t.Helper()
	got := e.kc.Committed(e.t, group, topic)
	out := make([]int64, partitions)
	for p := range partitions {
		out[p] = -1
		if c, ok := got[p]; ok {
			out[p] = c.Offset
		}
	}
	return out
}

// waitCommitted waits until group has committed want on every partition.
func (e *env) waitCommitted(group string, want ...int64) {
	e.t.Helper()
	var got []int64
	ok := assert.Eventually(e.t, func() bool {
		got = e.committed(group, int32(len(want)))
		return slices.Equal(got, want)
	}, kafkatest.Timeout, 10*time.Millisecond)
	if !ok {
		e.t.Fatalf("group %s: committed %v, want %v", group, got, want)
	}
}

// expect is what one operation id must have left in the database.
type expect struct {
	applied bool
	account string
	amount  int64
	pruned  bool // applied, and its marker pruned since
}

// verify compares every operation id with its expected effect: a marker exactly when
// applied (and not pruned), exactly one entry of the right account and amount when applied and none
// otherwise, and each account's balance = opening + the credits applied to it. Ids that
// are not in ops must have left nothing.
func (e *env) verify(when string, opening map[string]int64, ops map[string]expect) {
	e.t.Helper()
	ctx := context.Background()
	markers, err := e.store.Markers(ctx)
	require.NoError(e.t, err)
	entries, err := e.store.Entries(ctx)
	require.NoError(e.t, err)
	balances, err := e.store.Balances(ctx)
	require.NoError(e.t, err)
	wantBal := map[string]int64{}
	for acct, bal := range opening {
		wantBal[acct] = bal
	}
	for _, id := range sortedKeys(ops) {
		w := ops[id]
		_, marked := markers[id]
		if w.applied {
			wantBal[w.account] += w.amount
			if w.pruned {
				assert.False(e.t, marked, "%s: %s's marker was pruned", when, id)
			} else {
				assert.True(e.t, marked, "%s: %s applied, its marker must be present", when, id)
			}
			if assert.Len(e.t, entries[id], 1, "%s: %s applied once", when, id) {
				assert.Equal(e.t, w.account, entries[id][0].Account, "%s: %s account", when, id)
				assert.Equal(e.t, w.amount, entries[id][0].Amount, "%s: %s amount", when, id)
			}
		} else {
			assert.False(e.t, marked, "%s: %s not applied, no marker", when, id)
			assert.Empty(e.t, entries[id], "%s: %s not applied, no entry", when, id)
		}
	}
	for id := range markers {
		_, ok := ops[id]
		assert.True(e.t, ok, "%s: unexpected marker %q", when, id)
	}
	for id := range entries {
		_, ok := ops[id]
		assert.True(e.t, ok, "%s: unexpected entries of %q", when, id)
	}
	assert.Equal(e.t, wantBal, balances, "%s: balances", when)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// instance is one running Service.
type instance struct {
	name   string
	svc    *service.Service
	cancel context.CancelFunc
	done   chan error
	result error
	ended  bool
	logs   *syncBuffer

	mu        sync.Mutex
	decisions []service.Decision
	commits   []ledger.Commit
}

// start runs a Service with cfg; the instance records every decision and commit before the
// hooks of cfg run.
func (e *env) start(name string, cfg service.Config) *instance {
	e.t.Helper()
	return e.prepare(name, cfg).run(e.t)
}

// prepare creates the instance without running it, so that hooks can refer to it before its
// loop starts.
func (e *env) prepare(name string, cfg service.Config) *instance {
	e.t.Helper()
	in := &instance{name: name, done: make(chan error, 1), logs: &syncBuffer{}}
	cfg.Logger = slog.New(slog.NewTextHandler(in.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	decided, committed := cfg.Hooks.Decided, cfg.Hooks.Committed
	cfg.Hooks.Decided = func(d service.Decision) {
		in.mu.Lock()
		in.decisions = append(in.decisions, d)
		in.mu.Unlock()
		if decided != nil {
			decided(d)
		}
	}
	cfg.Hooks.Committed = func(cs []ledger.Commit) {
		in.mu.Lock()
		in.commits = append(in.commits, cs...)
		in.mu.Unlock()
		if committed != nil {
			committed(cs)
		}
	}
	svc, err := service.New(cfg)
	require.NoError(e.t, err)
	in.svc = svc
	return in
}

// run starts the instance's consumer; t's cleanup stops it.
func (in *instance) run(t *testing.T) *instance {
	ctx, cancel := context.WithCancel(context.Background())
	in.cancel = cancel
	go func() { in.done <- in.svc.Run(ctx) }()
	t.Cleanup(func() {
		in.stop(t)
		if t.Failed() {
			t.Logf("logs of %s:\n%s", in.name, in.logs.String())
		}
	})
	return in
}

// stop cancels the instance (a graceful shutdown) and returns Run's result.
func (in *instance) stop(t *testing.T) error {
	t.Helper()
	in.cancel()
	return in.wait(t)
}

// wait waits for Run to return, after a stop or an abort.
func (in *instance) wait(t *testing.T) error {
	t.Helper()
	if in.ended {
		return in.result
	}
	select {
	case in.result = <-in.done:
	case <-time.After(kafkatest.Timeout):
		in.svc.Abort()
		in.result = <-in.done
		t.Errorf("%s did not stop within %s", in.name, kafkatest.Timeout)
	}
	in.ended = true
	return in.result
}

// outcomes returns the instance's decisions as "op_id:outcome" (or "offset:outcome:class"
// for a message that did not decode), in order.
func (in *instance) outcomes() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := make([]string, len(in.decisions))
	for i, d := range in.decisions {
		switch {
		case d.Credit.ID == "":
			out[i] = fmt.Sprintf("@%d:%s:%s", d.Offset, d.Outcome, d.Class)
		case d.Class != "":
			out[i] = fmt.Sprintf("%s:%s:%s", d.Credit.ID, d.Outcome, d.Class)
		default:
			out[i] = fmt.Sprintf("%s:%s", d.Credit.ID, d.Outcome)
		}
	}
	return out
}

func (in *instance) decided(n int) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.decisions) >= n
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
