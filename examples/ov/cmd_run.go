package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/streamledger/streamledger/examples/ov/event"
	"github.com/streamledger/streamledger/examples/ov/pipeline"
	"github.com/streamledger/streamledger/internal/ovharness/killpoints"
	"github.com/streamledger/streamledger/ledger/consumer"
	"github.com/streamledger/streamledger/ledger/consumer/prom"
)

// DefaultDatabaseURL is used when neither --dsn nor $DATABASE_URL is given.
const DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

func runProcessor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, o := newRunFlags(stderr)
	if err := f.parse(args); err != nil {
		return err
	}
	st, err := o.settings(stderr)
	if err != nil {
		return err
	}
	log := st.log
	gogc, memLimit := setGC(st.bufferLimit)
	log.Info("garbage collector", "gogc", gogc, "memory_limit", memLimit)
	go followLiveHeap(ctx, func(limit, live int64) {
		log.Warn("the live heap outgrew the memory limit set from the buffer bound; the limit follows it "+
			"(open windows larger than --buffer-limit cannot be written before they close)",
			"live_heap", live, "memory_limit", limit, "buffer_limit", st.bufferLimit)
	})

	db, closeDB, err := openDatabase(ctx, *o.dsn, *o.schema)
	if err != nil {
		return err
	}
	defer closeDB()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m, err := prom.New(reg)
	if err != nil {
		return err
	}
	p, err := pipeline.New(ctx, o.pipelineConfig(st, m), db)
	if err != nil {
		return err
	}

	if *o.metricsAddr != "" {
		stop, addr, err := serveMetrics(*o.metricsAddr, reg, p.Health, log)
		if err != nil {
			return err
		}
		defer stop()
		log.Info("serving /metrics and /healthz", "addr", addr)
	}
	stopAbort := secondSignal(ctx, func() {
		log.Warn("second signal: aborting the graceful shutdown")
		p.Abort()
	})
	defer stopAbort()
	err = p.Run(ctx)
	c := p.Counters()
	log.Info("processor stopped", "consumed", c.Consumed, "admitted", c.Admitted, "late", c.Late, "dead_lettered", c.DeadLettered,
		"commits", c.Commits)
	return err
}

// runFlags are the flags of "ov run", each with its environment variable.
type runFlags struct {
	brokers          *string
	group            *string
	posTopic         *string
	predTopic        *string
	dsn              *string
	schema           *string
	windowSize       *time.Duration
	lateness         *time.Duration
	flushInterval    *time.Duration
	caughtUp         *time.Duration
	writeTimeout     *time.Duration
	shutdownTimeout  *time.Duration
	writeConcurrency *int
	idle             *time.Duration
	metricsAddr      *string
	noMigrate        *bool
	processorID      *string
	createDLQ        *bool
	bbox             *string
	maxDelay         *time.Duration
	untilCaughtUp    *bool
	lostRecords      *string
	bufferLimit      *string
	logLevel         *string
	logFormat        *string
	groupProtocol    *string
	assignor         *string
	remoteAssignor   *string
	kafkaProps       *string
	clockRate        *float64
}

func newRunFlags(stderr io.Writer) (*flags, *runFlags) {
	f := newFlags("run", "The OV processor: reads vehicle positions and arrival predictions from Kafka and writes\n"+
		"delay_aggregates, vehicle_latest and trip_delay_latest to Postgres, or to MySQL or MariaDB with a\n"+
		"mysql:// --dsn, committing offsets only past what is durable. SIGINT or SIGTERM shuts it down gracefully; a second one aborts.", stderr)
	o := &runFlags{}
	o.brokers = f.String("brokers", "OV_BROKERS", "127.0.0.1:9092", "Kafka bootstrap servers")
	o.group = f.String("group", "OV_GROUP", pipeline.DefaultGroup, "consumer group")
	o.posTopic = f.String("positions-topic", "OV_POSITIONS_TOPIC", pipeline.DefaultPositionsTopic, "vehicle positions topic")
	o.predTopic = f.String("predictions-topic", "OV_PREDICTIONS_TOPIC", pipeline.DefaultPredictionsTopic, "arrival predictions topic")
	o.dsn = f.String("dsn", "DATABASE_URL", DefaultDatabaseURL, "Postgres connection string, or mysql://user:password@host:port/database for MySQL or MariaDB")
	o.schema = f.String("schema", "OV_SCHEMA", "public", "Postgres schema of the tables (MySQL: the DSN's database)")
	o.windowSize = f.Duration("window", "OV_WINDOW", 5*time.Minute, "tumbling window size")
	o.lateness = f.Duration("lateness", "OV_LATENESS", 2*time.Minute, "allowed lateness")
	o.flushInterval = f.Duration("flush-interval", "OV_FLUSH_INTERVAL", 5*time.Second, "period of state flush, window writes and commits")
	o.caughtUp = f.Duration("flush-when-caught-up", "OV_FLUSH_WHEN_CAUGHT_UP", 0, "tick early when the consumer has caught up, at most this often; 0: a fifth of --flush-interval; negative: never")
	o.writeTimeout = f.Duration("write-timeout", "OV_WRITE_TIMEOUT", 0, "bound of one tick's sink writes; 0: 30s (keep it under half of max.poll.interval.ms)")
	o.shutdownTimeout = f.Duration("shutdown-timeout", "OV_SHUTDOWN_TIMEOUT", 0, "bound of the graceful shutdown: the last writes and commit, then closing the Kafka consumer (it waits for the group coordinator); 0: 30s")
	o.writeConcurrency = f.Int("write-concurrency", "OV_WRITE_CONCURRENCY", 0, "how many of a tick's sink writes run at once; 0: 2")
	o.idle = f.Duration("idle-timeout", "OV_IDLE_TIMEOUT", 30*time.Second, "quiet time after which a caught-up partition is idle; negative: never")
	o.metricsAddr = f.String("metrics-addr", "OV_METRICS_ADDR", "127.0.0.1:9464", "listen address of /metrics and /healthz; empty disables")
	o.noMigrate = f.Bool("no-migrate", "OV_NO_MIGRATE", false, "do not create or upgrade the tables on start")
	o.processorID = f.String("processor-id", "OV_PROCESSOR_ID", defaultProcessorID(), "this instance's name in dead letters and as client.id")
	o.createDLQ = f.Bool("create-dlq-topics", "OV_CREATE_DLQ_TOPICS", true, "create a missing dlq.<topic> with the source's partition count")
	o.bbox = f.String("bbox", "OV_BBOX", formatBox(event.Netherlands()), "accepted coordinates: minLat,maxLat,minLon,maxLon")
	o.maxDelay = f.Duration("max-delay", "OV_MAX_DELAY", event.DefaultMaxDelay, "largest accepted punctuality, early or late")
	o.untilCaughtUp = f.Bool("until-caught-up", "OV_UNTIL_CAUGHT_UP", false, "a bounded run: consume every partition up to its end as of the start, write every window and exit")
	o.lostRecords = f.String("lost-records", "OV_LOST_RECORDS", "stop", "records deleted (retention, DeleteRecords) before they were read: stop, or continue (each range goes to the dead-letter topic)")
	o.bufferLimit = f.String("buffer-limit", "OV_BUFFER_LIMIT", "0", "bound of the memory the processor holds (open windows, unwritten rows, the client's prefetch), in bytes or with KiB, MiB or GiB; 0: 256MiB; negative: no bound")
	o.logLevel = f.String("log-level", "OV_LOG_LEVEL", "info", "debug, info, warn or error")
	o.logFormat = f.String("log-format", "OV_LOG_FORMAT", "text", "text or json")
	o.groupProtocol = f.String("group-protocol", "OV_GROUP_PROTOCOL", "classic", "group.protocol: classic, or consumer (KIP-848: the broker assigns partitions and sets the session; librdkafka 2.11 calls it a preview)")
	o.assignor = f.String("assignor", "OV_ASSIGNOR", "", "classic protocol: partition.assignment.strategy, range, roundrobin or cooperative-sticky; empty: librdkafka's default")
	o.remoteAssignor = f.String("remote-assignor", "OV_REMOTE_ASSIGNOR", "", "consumer protocol: group.remote.assignor, uniform or range; empty: the broker's default")
	o.kafkaProps = f.String("kafka", "OV_KAFKA", "", "extra librdkafka properties, key=value[,key=value] (TLS, SASL, timeouts); never logged")
	o.clockRate = f.Float("clock-rate", "OV_CLOCK_RATE", 1, "test hook: the processor's clock runs this many times faster than the wall clock from its start (idle timeouts and idle advances)")
	return f, o
}

// runSettings are what the flags of "ov run" parse into, beyond the plain values.
type runSettings struct {
	kafka       kafka.ConfigMap
	faults      *killpoints.Set
	box         event.Box
	bufferLimit int64
	lost        consumer.LostPolicy
	log         *slog.Logger
}

// settings parses the flags that are not plain values, and $OV_FAULT.
func (o *runFlags) settings(stderr io.Writer) (runSettings, error) {
	var st runSettings
	var err error
	st.kafka, err = parseKafkaProps(*o.kafkaProps, groupJoin{protocol: *o.groupProtocol, assignor: *o.assignor, remoteAssignor: *o.remoteAssignor})
	if err != nil {
		return st, err
	}
	if *o.clockRate <= 0 {
		return st, fmt.Errorf("clock rate %v: want a positive number", *o.clockRate)
	}
	if st.faults, err = killpoints.Parse(os.Getenv(killpoints.Env)); err != nil {
		return st, err
	}
	if st.box, err = parseBox(*o.bbox); err != nil {
		return st, err
	}
	if st.bufferLimit, err = parseBytes(*o.bufferLimit); err != nil {
		return st, fmt.Errorf("--buffer-limit: %w", err)
	}
	switch *o.lostRecords {
	case "stop":
		st.lost = consumer.LostStop
	case "continue":
		st.lost = consumer.LostContinue
	default:
		return st, fmt.Errorf("--lost-records %q: want stop or continue", *o.lostRecords)
	}
	st.log, err = newLogger(stderr, *o.logLevel, *o.logFormat)
	return st, err
}

// pipelineConfig is the processor's configuration from the flags.
func (o *runFlags) pipelineConfig(st runSettings, m *prom.Metrics) pipeline.Config {
	return pipeline.Config{
		Brokers:           *o.brokers,
		Group:             *o.group,
		PositionsTopic:    *o.posTopic,
		PredictionsTopic:  *o.predTopic,
		Migrate:           !*o.noMigrate,
		WindowSize:        *o.windowSize,
		Lateness:          *o.lateness,
		IdleTimeout:       *o.idle,
		FlushInterval:     *o.flushInterval,
		FlushWhenCaughtUp: *o.caughtUp,
		WriteTimeout:      *o.writeTimeout,
		WriteConcurrency:  *o.writeConcurrency,
		ShutdownTimeout:   *o.shutdownTimeout,
		Decoder:           event.Config{Box: st.box, MaxDelay: *o.maxDelay},
		ProcessorID:       *o.processorID,
		CreateDLQTopics:   *o.createDLQ,
		BufferLimit:       st.bufferLimit,
		LostRecords:       st.lost,
		Until:             consumer.Until{End: *o.untilCaughtUp},
		Kafka:             st.kafka,
		Clock:             rateClock(*o.clockRate, time.Now),
		Logger:            st.log,
		Hooks:             append([]consumer.Hook{pipeline.GroupEvents(st.log)}, st.faults.Hooks(st.log)...),
		Metrics:           m,
	}
}

func defaultProcessorID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		return pipeline.DefaultProcessorID
	}
	return pipeline.DefaultProcessorID + "@" + host
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("log format %q: want text or json", format)
}

// connect opens a pool and checks that the server answers.
func connect(ctx context.Context, dsn string) (*pgxpool.Pool, error) {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres at %s: %w", redactDSN(dsn), err)
	}
	return pool, nil
}

// redactDSN hides a password in a connection string for messages.
func redactDSN(dsn string) string {
	at := strings.LastIndex(dsn, "@")
	scheme := strings.Index(dsn, "://")
	if at < 0 || scheme < 0 || at < scheme {
		return dsn
	}
	userinfo := dsn[scheme+3 : at]
	if i := strings.Index(userinfo, ":"); i >= 0 {
		return dsn[:scheme+3] + userinfo[:i] + ":xxxxx" + dsn[at:]
	}
	return dsn
}

// serveMetrics serves /metrics from reg and /healthz on addr. It returns a function that shuts
// the server down, and the address bound.
func serveMetrics(addr string, reg *prometheus.Registry, health func() consumer.Health, log *slog.Logger) (func(), string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("metrics endpoint: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /healthz", healthz(health))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics endpoint stopped", "error", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, ln.Addr().String(), nil
}

// healthz answers a liveness probe: 200 while the processor is starting or healthy, 503 with
// the reason when it holds no partition past its wait, its writes are stalled, or it stopped.
// The body is the state and its figures, one per line.
func healthz(health func() consumer.Health) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		h := health()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		switch h.State {
		case consumer.Healthy, consumer.HealthStarting:
			w.WriteHeader(http.StatusOK)
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprintf(w, "%s\npartitions %d\nunassigned %s\nsince assignment %s\nstalled %s\n", h.State, h.Partitions,
			h.Unassigned.Round(time.Millisecond), h.SinceAssignment.Round(time.Millisecond), h.Stalled.Round(time.Millisecond))
	}
}

// rateClock returns a clock that starts at now() and runs rate times faster.
func rateClock(rate float64, now func() time.Time) func() time.Time {
	if rate == 1 {
		return nil
	}
	start := now()
	return func() time.Time {
		return start.Add(time.Duration(float64(now().Sub(start)) * rate))
	}
}
