package pipeline_test

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/examples/ov/event"
	"github.com/streamledger/streamledger/examples/ov/feed"
	"github.com/streamledger/streamledger/examples/ov/pipeline"
	"github.com/streamledger/streamledger/internal/kafkatest"
	"github.com/streamledger/streamledger/internal/mytest"
	"github.com/streamledger/streamledger/internal/ovharness/oracle"
	"github.com/streamledger/streamledger/internal/ovharness/verify"
	"github.com/streamledger/streamledger/internal/pgtest"
	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/ledger/consumer"
	"github.com/streamledger/streamledger/sink"
)

const (
	partitions = 6
	window     = 5 * time.Minute
	lateness   = 2 * time.Minute
	group      = "ov-e2e"
)

// e2eFeed is several hours of a small network over the morning, with every path: disorder
// within the lateness, late predictions and malformed messages.
func e2eFeed() feed.Config {
	cfg := feed.Config{Seed: 2026, Scale: 0.03, Start: time.Date(2026, 3, 10, 5, 30, 0, 0, feed.CET()), Duration: 4 * time.Hour,
		WindowSize: window, Lateness: lateness, DisorderShare: 0.1, LateShare: 0.01, MalformedShare: 0.004}
	if !testing.Short() && os.Getenv("OV_E2E_LONG") != "" {
		cfg.Scale, cfg.Duration = 0.05, 6*time.Hour
	}
	return cfg
}

// env is a broker with the feed's records in it, a private database, and the oracle's answer.
type env struct {
	t       *testing.T
	cluster *kafkatest.Cluster
	db      backend
	records []feed.Record
	oracle  *oracle.Result
	rec     *recorder
}

// backend is the database a test's processor writes to, and how the test reads it back.
type backend struct {
	open pipeline.Database
	read verify.Store
}

// postgresBackend is a private schema on the Postgres test server.
func postgresBackend(t *testing.T) backend {
	db := pgtest.New(t)
	return backend{open: pipeline.Postgres(db.Pool, db.Schema), read: verify.Postgres(db.Pool, db.Schema)}
}

// mysqlBackend is a private database on the MySQL or MariaDB test server.
func mysqlBackend(t *testing.T) backend {
	db := mytest.New(t)
	return backend{open: pipeline.MySQL(db.DB), read: verify.MySQL(db.DB)}
}

func newEnv(t *testing.T) *env { return newEnvOn(t, postgresBackend) }

func newEnvOn(t *testing.T, db func(*testing.T) backend) *env {
	fc := e2eFeed()
	records, stats, err := feed.Generate(fc)
	require.NoError(t, err)
	dec, err := event.NewDecoder(event.Config{})
	require.NoError(t, err)
	or, err := oracle.Compute(oracle.Config{PositionsTopic: feed.DefaultPositionsTopic, PredictionsTopic: feed.DefaultPredictionsTopic,
		Partitions: partitions, WindowSize: window, Lateness: lateness, Decoder: dec}, records)
	require.NoError(t, err)
	t.Logf("feed: %d records (%d positions, %d predictions) over %v at scale %v; oracle: %+v", len(records), stats.Positions,
		stats.Predictions, fc.Duration, fc.Scale, or.Total)

	topics := map[string]int32{}
	for _, tp := range []string{feed.DefaultPositionsTopic, feed.DefaultPredictionsTopic} {
		topics[tp] = partitions
		topics[dlq.DefaultTopic(tp)] = partitions
	}
	cluster := kafkatest.Start(t, kafkatest.Config{Topics: topics})
	batch := make([]*kafkatest.Record, len(records))
	for i, r := range records {
		batch[i] = &kafkatest.Record{Topic: r.Topic, Partition: feed.Partition(r.Key, partitions), Timestamp: r.Timestamp, Key: r.Key, Value: r.Value}
	}
	cluster.Produce(t, batch...)
	return &env{t: t, cluster: cluster, db: db(t), records: records, oracle: or, rec: newRecorder()}
}

// runOpts are the processor settings a test varies.
// closing is how far a run closed each partition.
type closing int

const (
	closedByWatermark closing = iota // exactly through the oracle's watermark
	closedIdle                       // past the last event: idle partitions followed the clock
	closedAtEnd                      // through the end of the last window: a bounded run's end of input
)

type runOpts struct {
	clock func() time.Time
	idle  time.Duration
	until consumer.Until
}

func (e *env) pipeline(ctx context.Context, o runOpts) *pipeline.Pipeline {
	if o.idle == 0 {
		o.idle = -1 // so that closed_through ends exactly at the oracle's watermark
	}
	kcfg := e.cluster.ConfigMap()
	delete(kcfg, "bootstrap.servers")
	level := slog.LevelWarn
	if os.Getenv("OV_E2E_LOG") != "" {
		level = slog.LevelDebug
	}
	p, err := pipeline.New(ctx, pipeline.Config{
		Brokers:       e.cluster.Addr(),
		Group:         group,
		Migrate:       true,
		WindowSize:    window,
		Lateness:      lateness,
		IdleTimeout:   o.idle,
		Clock:         o.clock,
		FlushInterval: 100 * time.Millisecond,
		Kafka:         kcfg,
		Logger:        slog.New(slog.NewTextHandler(testWriter{e.t}, &slog.HandlerOptions{Level: level})),
		Hooks:         []consumer.Hook{e.rec},
		Until:         o.until,
	}, e.db.open)
	require.NoError(e.t, err)
	return p
}

// run runs a pipeline until the recorder has seen `until` distinct offsets decided, then stops
// it gracefully, or with Abort when abort is set. It returns the run's counters.
func (e *env) run(until int, abort bool) consumer.Counters {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := e.pipeline(ctx, runOpts{})
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	// The last run must also decide again what an earlier, aborted run decided without
	// committing: those offsets count as decided already, so reaching `until` alone could stop
	// it before it replayed them, and leave them uncommitted.
	last := until >= len(e.records)
	ends := map[ledger.TopicPartition]int64{}
	for src, p := range e.oracle.Partitions {
		ends[tp(src)] = p.Records
	}
	deadline := time.After(3 * time.Minute)
	for e.rec.distinct() < until || (last && !e.rec.reached(ends)) {
		select {
		case err := <-done:
			require.NoError(e.t, err, "the processor stopped early")
			e.t.Fatal("the processor stopped early")
		case <-deadline:
			e.t.Fatalf("after 3 minutes %d of %d offsets decided", e.rec.distinct(), until)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if abort {
		p.Abort()
	}
	cancel()
	select {
	case err := <-done:
		if abort {
			require.ErrorIs(e.t, err, consumer.ErrAborted)
		} else {
			require.NoError(e.t, err)
		}
	case <-time.After(time.Minute):
		e.t.Fatal("the processor did not stop within a minute")
	}
	c := p.Counters()
	assert.Equal(e.t, c.Consumed, c.Admitted+c.Late+c.DeadLettered, "the run's counts add up: %+v", c)
	return c
}

// check compares everything the processor stored with the oracle. Unless end is
// closedByWatermark, every partition closed every window (idle after the last record, or at
// the end of a bounded run): closed_through is past the oracle's watermark and every offset is
// committed.
func (e *env) check(end closing) {
	t := e.t
	ctx := context.Background()
	r := e.oracle

	// Every delivery of every offset was decided as the oracle decides it.
	want := map[ledger.TopicPartition]map[int64]consumer.Decision{}
	for src, p := range r.Partitions {
		m := map[int64]consumer.Decision{}
		for off := range p.Records {
			m[off] = consumer.Admitted
		}
		want[tp(src)] = m
	}
	for _, l := range r.DeadLetters {
		want[tp(l.Source)][l.Offset] = consumer.DeadLettered
	}
	for _, l := range r.Late {
		want[tp(l.Source)][l.Offset] = consumer.Late
	}
	decided, deliveries := e.rec.snapshot()
	require.Equal(t, len(e.records), len(decided), "every record was decided")
	mismatches, written := 0, 0
	for key, ds := range decided {
		for _, d := range ds {
			w := want[key.tp][key.offset]
			if d.outcome == w {
				continue
			}
			// One difference is by design: the processor wrote a window (and its progress) but
			// stopped before committing past its messages. The next owner restores the watermark
			// from that progress, so the replayed messages of the written window are late: the
			// window is never rebuilt from a fragment, and its row already holds them.
			if d.outcome == consumer.Late && w == consumer.Admitted && !d.windowEnd.After(d.assign.ClosedThrough) &&
				d.assign.ClosedThrough.After(d.assign.MetadataWatermark) {
				written++
				continue
			}
			if mismatches++; mismatches <= 10 {
				t.Errorf("%s@%d decided %v, oracle says %v (window end %v, assigned at %d with metadata watermark %v, closed through %v)",
					key.tp, key.offset, d.outcome, w, d.windowEnd, d.assign.Committed, d.assign.MetadataWatermark, d.assign.ClosedThrough)
			}
		}
	}
	t.Logf("%d records decided in %d deliveries (%d replayed into windows written before the last commit: late)", len(decided),
		deliveries, written)

	// Progress: each prediction partition closed exactly through the oracle's watermark.
	closable := r.ClosableThrough()
	var tps []sink.TopicPartition
	for src := range closable {
		tps = append(tps, tp(src))
	}
	snk, err := e.db.open(nil, nil)
	require.NoError(t, err)
	progress, err := snk.ClosedThrough(ctx, tps...)
	require.NoError(t, err)
	closed := map[oracle.Source]time.Time{}
	for src, wm := range closable {
		got, ok := progress[tp(src)]
		require.True(t, ok, "no progress for %s", src)
		last := r.Partitions[src].MaxEventTime
		switch end {
		case closedIdle:
			assert.True(t, !got.Before(last.Add(window)), "%s closed through %v, not past its last event %v", src, got, last)
		case closedAtEnd:
			lastEnd := last.Truncate(window).Add(window)
			assert.True(t, got.Equal(lastEnd), "%s closed through %v, want the end of its last window %v", src, got, lastEnd)
		default:
			assert.True(t, got.Equal(wm), "%s closed through %v, oracle watermark %v", src, got, wm)
		}
		closed[src] = got
	}

	// The tables equal the oracle row for row, and the dead-letter topics hold exactly the
	// malformed records, each at its source offset (package verify holds the comparison).
	wantRows, err := r.Aggregates(closed)
	require.NoError(t, err)
	gotRows, err := e.db.read.Aggregates(ctx)
	require.NoError(t, err)
	vehicles, trips, err := e.db.read.States(ctx)
	require.NoError(t, err)
	rep := &verify.Report{Rows: map[string]int{}}
	verify.CompareAggregates(rep, wantRows, gotRows)
	verify.CompareStates(rep, r, vehicles, trips)
	var letters []dlq.DeadLetter
	var dlqParts []int32
	classes := map[string]int{}
	for _, topic := range []string{feed.DefaultPositionsTopic, feed.DefaultPredictionsTopic} {
		for _, m := range e.cluster.ReadAll(t, dlq.DefaultTopic(topic)) {
			hs := make([]dlq.Header, len(m.Headers))
			for i, h := range m.Headers {
				hs[i] = dlq.Header{Key: h.Key, Value: h.Value}
			}
			d, err := dlq.Decode(m.Key, m.Value, hs)
			require.NoError(t, err)
			letters = append(letters, d)
			dlqParts = append(dlqParts, m.Partition)
			classes[d.ErrorClass]++
		}
	}
	verify.Letters(rep, r, letters, dlqParts)
	for i, m := range rep.Mismatches {
		if i == 20 {
			t.Errorf("... and %d more", len(rep.Mismatches)-i)
			break
		}
		t.Error(m)
	}
	t.Logf("rows equal the oracle's: %v; dead letters %d (%d redelivered copies), by class %v", rep.Rows, len(letters)-rep.LetterCopies,
		rep.LetterCopies, classes)
	malformed := 0
	for _, rec := range e.records {
		if rec.Intent == feed.Malformed {
			malformed++
		}
	}
	assert.Equal(t, malformed, len(letters)-rep.LetterCopies, "the dead letters are exactly the malformed records")

	// The committed offsets are exactly what is durable: never past a window still open.
	wantOffsets := r.CommittedOffsets(closed)
	for _, topic := range []string{feed.DefaultPositionsTopic, feed.DefaultPredictionsTopic} {
		committed := e.cluster.Committed(t, group, topic)
		for p := range int32(partitions) {
			src := oracle.Source{Topic: topic, Partition: p}
			assert.Equal(t, wantOffsets[src], committed[p].Offset, "%s committed offset (of %d records)", src, r.Partitions[src].Records)
			if end != closedByWatermark {
				assert.Equal(t, r.Partitions[src].Records, committed[p].Offset, "%s: everything is durable", src)
			}
		}
	}
}

func tp(s oracle.Source) ledger.TopicPartition {
	return ledger.TopicPartition{Topic: s.Topic, Partition: s.Partition}
}

// TestEndToEnd runs the processor over the feed once and compares every stored row, every
// dead letter and every committed offset with the oracle.
func TestEndToEnd(t *testing.T) { testOnce(t, newEnv(t)) }

func testOnce(t *testing.T, e *env) {
	start := time.Now()
	c := e.run(len(e.records), false)
	t.Logf("one run: %+v in %v", c, time.Since(start).Round(time.Millisecond))
	assert.Equal(t, e.oracle.Total.Consumed, c.Consumed)
	assert.Equal(t, e.oracle.Total.Admitted, c.Admitted)
	assert.Equal(t, e.oracle.Total.Late, c.Late)
	assert.Equal(t, e.oracle.Total.DeadLettered, c.DeadLettered)
	e.check(closedByWatermark)
}

// TestEndToEndMySQL is TestEndToEnd on MySQL or MariaDB: the same run, compared with the
// same oracle.
func TestEndToEndMySQL(t *testing.T) { testOnce(t, newEnvOn(t, mysqlBackend)) }

// TestEndToEndMySQLRestarts is TestEndToEndRestarts on MySQL or MariaDB.
func TestEndToEndMySQLRestarts(t *testing.T) { testRestarts(t, newEnvOn(t, mysqlBackend)) }

// TestEndToEndRestarts stops the processor four times in the middle, gracefully or by
// abandoning its shutdown, and restarts it in the same group: the stored result is the same.
func TestEndToEndRestarts(t *testing.T) { testRestarts(t, newEnv(t)) }

func testRestarts(t *testing.T, e *env) {
	total := len(e.records)
	var sum consumer.Counters
	for i, stop := range []struct {
		share float64
		abort bool
	}{{0.2, false}, {0.4, true}, {0.55, false}, {0.75, true}, {1, false}} {
		c := e.run(int(stop.share*float64(total)), stop.abort)
		t.Logf("run %d (until %.0f%%, abort %v): %+v", i+1, stop.share*100, stop.abort, c)
		sum.Consumed += c.Consumed
		sum.Admitted += c.Admitted
		sum.Late += c.Late
		sum.DeadLettered += c.DeadLettered
	}
	assert.GreaterOrEqual(t, sum.Consumed, e.oracle.Total.Consumed, "redelivery only adds deliveries")
	t.Logf("all runs: %+v (the oracle: %+v)", sum, e.oracle.Total)
	e.check(closedByWatermark)
}

// TestEndToEndIdle lets the partitions go idle once everything is consumed and moves the
// processor's clock two hours on: idle partitions close their last windows, so every window is
// written and every offset committed, and the rows still equal the oracle's.
func TestEndToEndIdle(t *testing.T) {
	e := newEnv(t)
	var shift atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(shift.Load())) }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := e.pipeline(ctx, runOpts{clock: clock, idle: 2 * time.Second})
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	require.Eventually(t, func() bool { return e.rec.distinct() == len(e.records) }, 3*time.Minute, 20*time.Millisecond)
	shift.Store(int64(2 * time.Hour))
	ticks := e.rec.tickCount()
	require.Eventually(t, func() bool {
		n, pending := e.rec.lastTick()
		return n > ticks+1 && pending == 0
	}, time.Minute, 20*time.Millisecond, "the ledger drains once idle partitions close their windows")
	cancel()
	require.NoError(t, <-done)
	e.check(closedIdle)
}

// TestEndToEndBounded runs the processor bounded, to the end of every partition: it returns
// by itself once everything is written and committed, and its rows equal the oracle's, every
// window included, as the idle partitions' rows do.
func TestEndToEndBounded(t *testing.T) { testBounded(t, newEnv(t)) }

// TestEndToEndMySQLBounded is TestEndToEndBounded on MySQL or MariaDB.
func TestEndToEndMySQLBounded(t *testing.T) { testBounded(t, newEnvOn(t, mysqlBackend)) }

func testBounded(t *testing.T, e *env) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p := e.pipeline(ctx, runOpts{until: consumer.Until{End: true}})
	require.NoError(t, p.Run(ctx))
	require.Equal(t, len(e.records), e.rec.distinct(), "every record decided")
	e.check(closedAtEnd)
}

// recorder is a hook that remembers every decision by partition and offset, with the
// assignment it was made in, and the ledger's depth at the last tick.
type recorder struct {
	mu         sync.Mutex
	decided    map[offsetKey][]decision
	assigned   map[ledger.TopicPartition]consumer.AssignInfo
	epochs     map[ledger.TopicPartition]int // assignments so far
	deliveries int
	ticks      int
	pending    int64
}

type decision struct {
	outcome   consumer.Decision
	windowEnd time.Time
	assign    consumer.AssignInfo
	epoch     int // the partition's assignments before this decision's
}

func (r *recorder) OnAssign(i consumer.AssignInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.assigned[i.TopicPartition] = i
	r.epochs[i.TopicPartition]++
}

// reached reports whether, under its current assignment, every partition has decided the
// offset before its end, or was assigned with everything before its end committed already.
func (r *recorder) reached(ends map[ledger.TopicPartition]int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for tp, end := range ends {
		if end == 0 {
			continue
		}
		a, ok := r.assigned[tp]
		if !ok {
			return false
		}
		if a.Committed >= end {
			continue
		}
		ds := r.decided[offsetKey{tp, end - 1}]
		if len(ds) == 0 || ds[len(ds)-1].epoch != r.epochs[tp] {
			return false
		}
	}
	return true
}

func (r *recorder) OnTick(i consumer.TickInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ticks++
	r.pending = i.Pending
}

func (r *recorder) tickCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ticks
}

func (r *recorder) lastTick() (int, int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ticks, r.pending
}

type offsetKey struct {
	tp     ledger.TopicPartition
	offset int64
}

func newRecorder() *recorder {
	return &recorder{decided: map[offsetKey][]decision{}, assigned: map[ledger.TopicPartition]consumer.AssignInfo{},
		epochs: map[ledger.TopicPartition]int{}}
}

func (r *recorder) OnMessage(i consumer.MessageInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := offsetKey{i.TopicPartition, i.Offset}
	r.decided[k] = append(r.decided[k], decision{outcome: i.Decision, windowEnd: i.WindowEnd, assign: r.assigned[i.TopicPartition],
		epoch: r.epochs[i.TopicPartition]})
	r.deliveries++
}

func (r *recorder) distinct() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.decided)
}

func (r *recorder) snapshot() (map[offsetKey][]decision, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[offsetKey][]decision, len(r.decided))
	for k, v := range r.decided {
		out[k] = append([]decision(nil), v...)
	}
	return out, r.deliveries
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(string(b))
	return len(b), nil
}
