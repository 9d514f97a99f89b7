package pipeline

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/dlq/dlqkafka"
	"github.com/streamledger/streamledger/examples/ov/event"
	"github.com/streamledger/streamledger/examples/ov/feed"
	"github.com/streamledger/streamledger/examples/ov/tables"
	"github.com/streamledger/streamledger/internal/kafkatest"
	"github.com/streamledger/streamledger/ledger/consumer"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/sinktest"
)

// measureEnv runs TestDeadLetterCost, a measurement of about half a minute.
const measureEnv = "OV_MEASURE"

// timedLetters measures the time the consumer's loop spends in each Send, and can slow it.
type timedLetters struct {
	next  consumer.DeadLetterer
	delay time.Duration

	mu         sync.Mutex
	n          int
	total, top time.Duration
}

func (l *timedLetters) Send(ctx context.Context, rec dlq.Record, cause error, done func(error)) error {
	t0 := time.Now()
	if l.delay > 0 {
		time.Sleep(l.delay)
	}
	err := l.next.Send(ctx, rec, cause, done)
	d := time.Since(t0)
	l.mu.Lock()
	l.n++
	l.total += d
	l.top = max(l.top, d)
	l.mu.Unlock()
	return err
}

// decided counts the decided messages and the ledger's highest depth.
type decided struct {
	n, pending atomic.Int64
}

func (d *decided) OnMessage(consumer.MessageInfo) { d.n.Add(1) }
func (d *decided) OnTick(i consumer.TickInfo) {
	for {
		old := d.pending.Load()
		if i.Pending <= old || d.pending.CompareAndSwap(old, i.Pending) {
			return
		}
	}
}

// TestDeadLetterCost measures what dead letters cost the goroutine that decides a message (the
// loop, or a worker), where Send runs: a healthy dead-letter topic, a Send slowed by 2 and
// 20 ms, a broker that refuses every letter (INVALID_RECORD: each delivery report fails, the
// runtime sends again after a backoff), and a dead-letter cluster that does not answer (the
// producer's first metadata lookup per topic waits up to the write timeout, and a failed lookup
// is not kept). It prints a table; it fails if a refused letter's offset was committed past.
func TestDeadLetterCost(t *testing.T) {
	if os.Getenv(measureEnv) == "" {
		t.Skipf("a measurement of about half a minute; set %s=1 to run it", measureEnv)
	}
	f := feed.Config{Seed: 7, Start: time.Date(2026, 3, 10, 7, 0, 0, 0, feed.CET()), Duration: time.Hour, Scale: 0.02,
		WindowSize: 5 * time.Minute, Lateness: 2 * time.Minute, MalformedShare: 0.02}
	records, _, err := feed.Generate(f)
	require.NoError(t, err)
	var table strings.Builder
	fmt.Fprintf(&table, "%-22s %8s %7s %10s %9s %12s %10s %12s\n", "dead-letter topic", "messages", "letters", "decided in",
		"msgs/s", "time in Send", "max Send", "max pending")
	for _, tc := range []struct {
		name        string
		delay       time.Duration
		refuse      bool
		unreachable bool
	}{
		{name: "healthy"},
		{name: "Send slowed 2 ms", delay: 2 * time.Millisecond},
		{name: "Send slowed 20 ms", delay: 20 * time.Millisecond},
		{name: "refusing every letter", refuse: true},
		{name: "unreachable cluster", unreachable: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row := measureDeadLetters(t, records, tc.delay, tc.refuse, tc.unreachable)
			fmt.Fprintf(&table, "%-22s %s\n", tc.name, row)
		})
	}
	t.Log("\n" + table.String())
}

// produceFeed writes records to their partitions and returns how many are malformed, and the
// offset of the first malformed record of each source partition ("topic[partition]").
func produceFeed(t *testing.T, c *kafkatest.Cluster, records []feed.Record, parts int32) (int, map[string]int64) {
	recs := make([]*kafkatest.Record, len(records))
	letters := 0
	firstBad := map[string]int64{}
	offsets := map[string]int64{}
	for i, r := range records {
		p := feed.Partition(r.Key, parts)
		recs[i] = &kafkatest.Record{Topic: r.Topic, Partition: p, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
		src := fmt.Sprintf("%s[%d]", r.Topic, p)
		if r.Intent == feed.Malformed {
			letters++
			if _, ok := firstBad[src]; !ok {
				firstBad[src] = offsets[src]
			}
		}
		offsets[src]++
	}
	c.Produce(t, recs...)
	return letters, firstBad
}

// measureDeadLetters runs one case and returns its row of the table.
func measureDeadLetters(t *testing.T, records []feed.Record, delay time.Duration, refuse, unreachable bool) string {
	const parts = 4
	topics := map[string]int32{}
	for _, tp := range []string{DefaultPositionsTopic, DefaultPredictionsTopic} {
		topics[tp], topics[dlq.DefaultTopic(tp)] = parts, parts
	}
	c := kafkatest.Start(t, kafkatest.Config{Topics: topics})
	letters, firstBad := produceFeed(t, c, records, parts)
	if refuse {
		for tp := range topics {
			if strings.HasPrefix(tp, "dlq.") {
				c.FailProduce(tp, -1, kerr.InvalidRecord)
			}
		}
	}
	dlqBrokers := c.Addr()
	if unreachable {
		dlqBrokers = "127.0.0.1:1" // nothing listens there
	}
	prod, err := dlqkafka.NewProducer(dlqkafka.Config{Kafka: kafka.ConfigMap{"bootstrap.servers": dlqBrokers, "log_level": 2},
		ConsumerID: "measure"})
	require.NoError(t, err)
	defer prod.Close(context.Background())
	letterer := &timedLetters{next: prod, delay: delay}
	dec, err := event.NewDecoder(event.Config{})
	require.NoError(t, err)
	mem, err := sinktest.NewMemory(sinktest.MemoryConfig{Aggregates: tables.Aggregates(), States: []sink.StateSpec{tables.Vehicles(), tables.Trips()}})
	require.NoError(t, err)
	var got decided
	cons, err := consumer.New(consumer.Config[tables.Key]{
		Kafka:         c.ConfigMap(kafka.ConfigMap{"group.id": "measure", "auto.offset.reset": "earliest"}),
		Topics:        Handlers(DefaultPositionsTopic, DefaultPredictionsTopic, dec),
		Sink:          mem,
		Series:        NewSeries(),
		DeadLetters:   letterer,
		FlushInterval: 100 * time.Millisecond,
		WriteTimeout:  time.Second,
		IdleTimeout:   -1,
		Hooks:         []consumer.Hook{&got},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- cons.Run(ctx) }()
	for got.n.Load() < int64(len(records)) && time.Since(start) < 20*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(start)
	time.Sleep(300 * time.Millisecond) // a tick's commit
	if refuse {
		for _, tp := range []string{DefaultPositionsTopic, DefaultPredictionsTopic} {
			for p, co := range c.Committed(t, "measure", tp) {
				if bad, ok := firstBad[fmt.Sprintf("%s[%d]", tp, p)]; ok {
					assert.LessOrEqual(t, co.Offset, bad, "%s[%d] committed past its refused dead letter", tp, p)
				}
			}
		}
	}
	cancel()
	<-done
	letterer.mu.Lock()
	defer letterer.mu.Unlock()
	return fmt.Sprintf("%8d %7d %10v %9.0f %12v %10v %12d", got.n.Load(), letters, took.Round(time.Millisecond),
		float64(got.n.Load())/took.Seconds(), letterer.total.Round(time.Millisecond), letterer.top.Round(time.Millisecond),
		got.pending.Load())
}
