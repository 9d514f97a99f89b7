package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/examples/ov/feed"
	"github.com/streamledger/streamledger/examples/ov/pipeline"
	"github.com/streamledger/streamledger/internal/ovharness/produce"
	"github.com/streamledger/streamledger/internal/procmem"
	"github.com/streamledger/streamledger/ledger/consumer"
)

// SeedOpenWindows is the seed's figure: 6,994 (window, key) aggregates open at once at the
// morning peak of the Dutch network. Sizes are given as multiples of it.
const SeedOpenWindows = 6994

// Defaults of the zero Case fields.
const (
	DefaultPartitions    = 6
	DefaultFlushInterval = time.Second
	DefaultDuration      = 10 * time.Minute
)

// DefaultStart is the simulated start of a bench feed: 07:45 CET, the morning peak.
func DefaultStart() time.Time { return time.Date(2026, 3, 10, 7, 45, 0, 0, feed.CET()) }

// Case is one measurement.
type Case struct {
	// Name labels the case in the table and the JSON.
	Name string
	// Size is the target open (window, key) aggregates as a multiple of SeedOpenWindows; it is
	// informational (the feed's Scale decides), the result carries what was measured.
	Size float64
	// Scale is the feed's (1: the national network).
	Scale float64
	// Partitions per topic [DefaultPartitions].
	Partitions int
	// Start and Duration are the simulated span of the feed [DefaultStart], [DefaultDuration].
	Start    time.Time
	Duration time.Duration
	// Seed of the feed.
	Seed uint64
	// Procs is the GOMAXPROCS of the consuming phases (the raw consumer and the pipeline);
	// zero leaves it as it is.
	Procs int
	// BufferLimit is the pipeline's (consumer.Config.BufferLimit); zero: the runtime's
	// default.
	BufferLimit int64
}

// Config is what every case shares.
type Config struct {
	// DSN is the Postgres connection string.
	DSN string
	// FlushInterval is the processor's tick [DefaultFlushInterval].
	FlushInterval time.Duration
	// Kafka holds extra librdkafka settings for the producer and both consumers.
	Kafka kafka.ConfigMap
	// Logger receives the processor's logs; nil discards them.
	Logger *slog.Logger
	// Progress, if set, receives a line per phase.
	Progress io.Writer
	// AroundPipeline, if set, is called when the pipeline phase of a case starts, and the
	// function it returns when the phase ends: the command starts and stops its CPU profile
	// there, so that the profile holds the processor, not the feed's generation.
	AroundPipeline func(c Case) (end func())
	// Exec, if set, runs the consuming phases of a case (Consume) elsewhere, in a child
	// process, so that the processor's memory and garbage collector are its own and not
	// shared with the broker's copy of the feed.
	Exec func(ctx context.Context, spec Spec) (Result, error)
	// AtProbe, if set, is called right after each live-heap probe (a forced GC), with the
	// open keys probed: the command writes a heap profile there, so that the last one shows
	// what the live heap held at the largest probe.
	AtProbe func(openKeys int)
	// Timeline, if set, is called when the pipeline phase of a case starts, and receives a
	// JSON line per tick and per write of the phase (see timelineLine); it is closed when the
	// phase ends.
	Timeline func(c Case) (io.WriteCloser, error)
}

func (c Case) withDefaults() Case {
	if c.Partitions == 0 {
		c.Partitions = DefaultPartitions
	}
	if c.Start.IsZero() {
		c.Start = DefaultStart()
	}
	if c.Duration == 0 {
		c.Duration = DefaultDuration
	}
	if c.Scale == 0 {
		c.Scale = 1
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	return c
}

// Run measures one case: it starts a broker, produces the feed, consumes it raw, then runs the
// pipeline through it into a schema of its own, dropped at the end.
func Run(ctx context.Context, cfg Config, c Case) (Result, error) {
	c = c.withDefaults()
	if cfg.FlushInterval == 0 {
		cfg.FlushInterval = DefaultFlushInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	progress := func(format string, args ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "  %s: "+format+"\n", append([]any{c.Name}, args...)...)
		}
	}
	res := Result{Name: c.Name, Size: c.Size, Scale: c.Scale, Partitions: c.Partitions,
		FeedStart: c.Start, FeedDuration: c.Duration.String(), FlushInterval: cfg.FlushInterval.String()}

	pos, pred := feed.DefaultPositionsTopic, feed.DefaultPredictionsTopic
	topics := []string{pos, pred, dlq.DefaultTopic(pos), dlq.DefaultTopic(pred)}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(c.Partitions), topics...))
	if err != nil {
		return res, fmt.Errorf("bench: starting the broker: %w", err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()[0]

	// Produce first; the clock starts afterwards.
	t0 := time.Now()
	ends, err := produceFeed(ctx, brokers, cfg.Kafka, c, &res)
	if err != nil {
		return res, err
	}
	res.ProduceSeconds = time.Since(t0).Seconds()
	progress("produced %d records in %.1fs", res.Records, res.ProduceSeconds)

	spec := Spec{Case: c, Brokers: brokers, Records: res.Records, DSN: cfg.DSN, FlushInterval: cfg.FlushInterval}
	for k, e := range ends {
		spec.Ends = append(spec.Ends, End{Topic: k.topic, Partition: k.part, Offset: e})
	}
	if cfg.Exec != nil {
		cres, err := cfg.Exec(ctx, spec)
		if err != nil {
			return res, err
		}
		cres.ProduceSeconds, cres.Records, cres.Positions, cres.Predictions, cres.PeakVehicles =
			res.ProduceSeconds, res.Records, res.Positions, res.Predictions, res.PeakVehicles
		cres.InChild = true
		res = cres
	} else if err := Consume(ctx, cfg, spec, &res); err != nil {
		return res, err
	}
	progress("raw %.0f ev/s, pipeline %.0f ev/s (ratio %.2f), peak open keys %d", res.Raw.EventsPerSec,
		res.Pipeline.EventsPerSec, res.Ratio, res.PeakOpenKeys)
	return res, nil
}

// Spec is what the consuming phases of a case need, so that they can run in a child process
// (Config.Exec), apart from the broker and the producer.
type Spec struct {
	Case          Case
	Brokers       string
	Records       int64
	Ends          []End
	DSN           string
	FlushInterval time.Duration
}

// End is a partition's end offset: the pipeline has drained when it committed every one.
type End struct {
	Topic     string
	Partition int32
	Offset    int64
}

// Consume runs the consuming phases of a case on a feed already produced: the raw reference,
// then the pipeline. It fills res's consumer figures.
func Consume(ctx context.Context, cfg Config, spec Spec, res *Result) error {
	c := spec.Case.withDefaults()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.DSN, cfg.FlushInterval = spec.DSN, spec.FlushInterval
	if cfg.FlushInterval == 0 {
		cfg.FlushInterval = DefaultFlushInterval
	}
	res.Name, res.Size, res.Scale, res.Partitions = c.Name, c.Size, c.Scale, c.Partitions
	res.FeedStart, res.FeedDuration, res.FlushInterval = c.Start, c.Duration.String(), cfg.FlushInterval.String()
	if c.Procs > 0 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(c.Procs))
	}
	res.BufferLimit = c.BufferLimit
	res.GOGC = debug.SetGCPercent(-1)
	debug.SetGCPercent(res.GOGC)
	res.MemoryLimit = debug.SetMemoryLimit(-1)
	res.Procs = runtime.GOMAXPROCS(0)
	if res.Records == 0 {
		res.Records = spec.Records
	}
	ends := map[partKey]int64{}
	for _, e := range spec.Ends {
		ends[partKey{e.Topic, e.Partition}] = e.Offset
	}
	procmem.ResetPeak()
	cpu := cpuTime()
	raw, err := consumeRaw(ctx, spec.Brokers, cfg.Kafka, spec.Records)
	if err != nil {
		return err
	}
	res.Raw = raw
	res.RawCPUNsPerEvent = float64(cpuTime()-cpu) / float64(max(raw.Events, 1))
	if err := runPipeline(ctx, cfg, c, spec.Brokers, ends, res); err != nil {
		return err
	}
	if res.Raw.EventsPerSec > 0 {
		res.Ratio = res.Pipeline.EventsPerSec / res.Raw.EventsPerSec
	}
	return nil
}

// produceFeed produces the whole feed and returns the end offset of every partition.
func produceFeed(ctx context.Context, brokers string, extra kafka.ConfigMap, c Case, res *Result) (map[partKey]int64, error) {
	gen, err := feed.New(feed.Config{Seed: c.Seed, Start: c.Start, Duration: c.Duration, Scale: c.Scale,
		DisorderShare: feed.SuggestedDisorderShare, LateShare: feed.SuggestedLateShare,
		MalformedShare: feed.SuggestedMalformedShare})
	if err != nil {
		return nil, err
	}
	prod, err := produce.New(ctx, brokers, []string{feed.DefaultPositionsTopic, feed.DefaultPredictionsTopic}, quiet(extra))
	if err != nil {
		return nil, err
	}
	defer prod.Close(10 * time.Second)
	ends := map[partKey]int64{}
	n := int32(c.Partitions)
	for {
		r, ok := gen.Next()
		if !ok {
			break
		}
		if err := prod.Send(ctx, r); err != nil {
			return nil, fmt.Errorf("bench: producing: %w", err)
		}
		ends[partKey{r.Topic, feed.Partition(r.Key, n)}]++
	}
	if err := prod.Flush(ctx); err != nil {
		return nil, fmt.Errorf("bench: flushing the producer: %w", err)
	}
	if err := prod.Err(); err != nil {
		return nil, fmt.Errorf("bench: producing: %w", err)
	}
	st := gen.Stats()
	res.Records = int64(st.Records)
	res.Positions, res.Predictions = int64(st.Positions), int64(st.Predictions)
	res.PeakVehicles = st.PeakVehicles
	return ends, nil
}

type partKey struct {
	topic string
	part  int32
}

func quiet(extra kafka.ConfigMap) kafka.ConfigMap {
	m := kafka.ConfigMap{"log_level": 4}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// consumerConfig is the consumer configuration both the raw reference and the pipeline use
// (pipeline.New adds group.id, auto.offset.reset, bootstrap.servers and client.id the same way,
// and the consumer runtime its fetch.queue.backoff.ms).
func consumerConfig(brokers, group string, extra kafka.ConfigMap) kafka.ConfigMap {
	m := kafka.ConfigMap{"group.id": group, "auto.offset.reset": "earliest", "bootstrap.servers": brokers,
		"client.id": "ov-bench", "fetch.queue.backoff.ms": 20}
	for k, v := range quiet(extra) {
		m[k] = v
	}
	return m
}

// consumeRaw polls every record with the same client and settings, doing nothing with them.
func consumeRaw(ctx context.Context, brokers string, extra kafka.ConfigMap, total int64) (Rate, error) {
	cm := consumerConfig(brokers, "ov-bench-raw", extra)
	cm["enable.auto.commit"] = false
	cons, err := kafka.NewConsumer(&cm)
	if err != nil {
		return Rate{}, fmt.Errorf("bench: raw consumer: %w", err)
	}
	defer cons.Close()
	if err := cons.SubscribeTopics([]string{feed.DefaultPositionsTopic, feed.DefaultPredictionsTopic}, nil); err != nil {
		return Rate{}, fmt.Errorf("bench: raw consumer: %w", err)
	}
	var n int64
	var first time.Time
	deadline := time.Now().Add(10 * time.Minute)
	for n < total {
		if err := ctx.Err(); err != nil {
			return Rate{}, err
		}
		if time.Now().After(deadline) {
			return Rate{}, fmt.Errorf("bench: raw consumer read %d of %d records in 10 minutes", n, total)
		}
		switch e := cons.Poll(100).(type) {
		case *kafka.Message:
			if e.TopicPartition.Error != nil {
				continue
			}
			if n == 0 {
				first = time.Now()
			}
			n++
		case kafka.Error:
			if e.IsFatal() {
				return Rate{}, fmt.Errorf("bench: raw consumer: %w", e)
			}
		}
	}
	d := time.Since(first)
	return Rate{Events: n, Seconds: d.Seconds(), EventsPerSec: float64(n) / d.Seconds()}, nil
}

// runPipeline runs the OV processor until it has committed every partition's end offset.
func runPipeline(ctx context.Context, cfg Config, c Case, brokers string, ends map[partKey]int64, res *Result) error {
	pool, err := pgxpool.New(ctx, cfg.DSN)
	if err != nil {
		return fmt.Errorf("bench: postgres: %w", err)
	}
	defer pool.Close()
	schema := fmt.Sprintf("ov_bench_%d", time.Now().UnixNano())
	ident := pgx.Identifier{schema}.Sanitize()
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+ident); err != nil {
		return fmt.Errorf("bench: creating schema %s: %w", schema, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_, _ = pool.Exec(dctx, "DROP SCHEMA IF EXISTS "+ident+" CASCADE")
	}()
	// The pipeline writes through a pool of its own, closed when it is done, so that its
	// server processes report their table statistics before they are read.
	sinkPool, err := pgxpool.New(ctx, cfg.DSN)
	if err != nil {
		return fmt.Errorf("bench: postgres: %w", err)
	}
	defer sinkPool.Close()

	// A bounded run: every partition up to its end, the last windows closed at the end of
	// input, then Run returns.
	m := newMeter(res.Records, ends)
	m.atProbe = cfg.AtProbe

	// Return what the raw phase freed to the OS, the Go heap's and the C heap's (the raw
	// consumer's client), so that the pipeline's peak RSS is its own and not the raw
	// consumer's high-water mark.
	debug.FreeOSMemory()
	trimCHeap()
	m.baseHeap = liveHeap()
	rssBase := procmem.RSS()
	procmem.ResetPeak()
	mark, err := markServer(ctx, pool)
	if err != nil {
		return err
	}
	cpuStart, gcStart := cpuTime(), gcCPU()
	if cfg.AroundPipeline != nil {
		end := cfg.AroundPipeline(c)
		defer end()
	}
	hooks := []consumer.Hook{m}
	if cfg.Timeline != nil {
		w, err := cfg.Timeline(c)
		if err != nil {
			return fmt.Errorf("bench: timeline: %w", err)
		}
		defer w.Close()
		hooks = append(hooks, newTimeline(w, time.Now))
	}
	p, err := pipeline.New(ctx, pipeline.Config{
		Brokers: brokers, Group: "ov-bench", Migrate: true, FlushInterval: cfg.FlushInterval,
		ProcessorID: "ov-bench", CreateDLQTopics: true, Kafka: quiet(cfg.Kafka), Logger: cfg.Logger,
		Until: consumer.Until{End: true}, Hooks: hooks, WrapHandler: m.wrap, BufferLimit: c.BufferLimit,
	}, pipeline.Postgres(sinkPool, schema))
	if err != nil {
		return err
	}
	stopOutside := sampleOutsideGo()
	err = drain(ctx, p, m)
	res.PeakOutsideGo = stopOutside()
	if err != nil {
		return err
	}
	m.fill(res, p.Counters(), cpuTime()-cpuStart, gcCPU()-gcStart)
	res.RSSGrowth = max(0, procmem.Peak()-rssBase)
	res.PeakRSS = procmem.Peak()
	sinkPool.Close()
	res.Storage, err = measureStorage(ctx, pool, schema, mark)
	return err
}

// drain runs the bounded pipeline until it returns, which it does once every partition is
// written and committed through its end.
func drain(ctx context.Context, p *pipeline.Pipeline, m *meter) error {
	runCtx, stop := context.WithTimeout(ctx, 15*time.Minute)
	defer stop()
	if err := p.Run(runCtx); err != nil {
		return fmt.Errorf("bench: pipeline (%s): %w", m.progress(), err)
	}
	if !m.done() {
		return fmt.Errorf("bench: the pipeline returned before committing every partition's end (%s)", m.progress())
	}
	return nil
}
