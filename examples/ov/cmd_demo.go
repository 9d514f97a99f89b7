package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/streamledger/streamledger/examples/ov/event"
	"github.com/streamledger/streamledger/examples/ov/feed"
	"github.com/streamledger/streamledger/examples/ov/pipeline"
	"github.com/streamledger/streamledger/examples/ov/tables"
	"github.com/streamledger/streamledger/internal/ovharness/broker"
	"github.com/streamledger/streamledger/internal/ovharness/figures"
	"github.com/streamledger/streamledger/internal/ovharness/produce"
	"github.com/streamledger/streamledger/ledger/consumer"
	"github.com/streamledger/streamledger/ledger/consumer/prom"
)

// demoIdleTimeout is the demo's idle timeout in simulated time: five seconds of wall time, so
// that a producer that stalls for a moment on a busy machine does not make a partition idle
// (its watermark would then run ahead of the data still coming), and at least the runtime's
// default.
func demoIdleTimeout(speed float64) time.Duration {
	return max(30*time.Second, time.Duration(5*speed*float64(time.Second)))
}

type demoFlags struct {
	dsn, schema, start, metricsAddr, logLevel string
	duration, flushInterval                   time.Duration
	speed, scale, lateShare, malformedShare   float64
	partitions, seed                          int
}

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newFlags("demo", "Runs the whole OV pipeline in one process: an in-process Kafka-protocol broker, the simulated\n"+
		"national feed played accelerated, and the processor writing to Postgres at $DATABASE_URL in a\n"+
		"schema of its own (dropped and recreated at the start). Shows a live progress line, then a\n"+
		"report: the most delayed lines and stations of the last complete window, counts that add up,\n"+
		"and psql queries to look further. About a minute by default; --duration makes it longer.", stderr)
	var o demoFlags
	f.FlagSet.StringVar(&o.dsn, "dsn", envOr("DATABASE_URL", DefaultDatabaseURL), "Postgres connection string ($DATABASE_URL)")
	f.FlagSet.StringVar(&o.schema, "schema", "ov_demo", "schema of the demo's tables (dropped and recreated)")
	f.FlagSet.StringVar(&o.start, "start", "06:45", "simulated start: HH:MM on Tuesday 10 March 2026 (CET), or RFC 3339")
	f.FlagSet.DurationVar(&o.duration, "duration", 90*time.Minute, "simulated time to play")
	f.FlagSet.Float64Var(&o.speed, "speed", 120, "simulated seconds per second")
	f.FlagSet.Float64Var(&o.scale, "scale", 0.25, "network size: 1 is the national network (5,000 vehicles at the peak)")
	f.FlagSet.IntVar(&o.partitions, "partitions", 8, "partitions per topic")
	f.FlagSet.IntVar(&o.seed, "seed", 1, "random seed of the feed")
	f.FlagSet.Float64Var(&o.lateShare, "late-share", feed.SuggestedLateShare, "share of predictions delivered beyond the lateness")
	f.FlagSet.Float64Var(&o.malformedShare, "malformed-share", feed.SuggestedMalformedShare, "share of malformed messages")
	f.FlagSet.DurationVar(&o.flushInterval, "flush-interval", time.Second, "the processor's flush and commit period")
	f.FlagSet.StringVar(&o.metricsAddr, "metrics-addr", "", "serve /metrics and /healthz here while the demo runs (e.g. 127.0.0.1:9464)")
	f.FlagSet.StringVar(&o.logLevel, "log-level", "error", "the processor's log level (logs go to stderr)")
	if err := f.parse(args); err != nil {
		return err
	}
	if !(o.speed > 0) {
		return fmt.Errorf("--speed must be positive (the demo runs on the simulated clock), found %g", o.speed)
	}
	st, err := parseStart(o.start, feed.DefaultStart())
	if err != nil {
		return err
	}
	log, err := newLogger(stderr, o.logLevel, "text")
	if err != nil {
		return err
	}
	return demo(ctx, o, st, log, stdout)
}

func envOr(env, def string) string {
	if v := os.Getenv(env); v != "" {
		return v
	}
	return def
}

func demo(ctx context.Context, o demoFlags, start time.Time, log *slog.Logger, out io.Writer) error {
	began := time.Now()
	pos, pred := feed.DefaultPositionsTopic, feed.DefaultPredictionsTopic
	fmt.Fprintf(out, "OV demo: %s of the Dutch network (scale %g) from %s CET, played at %gx, %d partitions per topic\n",
		o.duration, o.scale, start.In(feed.CET()).Format("15:04"), o.speed, o.partitions)

	pool, err := demoSchema(ctx, o.dsn, o.schema)
	if err != nil {
		return err
	}
	defer pool.Close()
	b, err := broker.Start(broker.Config{Topics: []string{pos, pred}, Partitions: int32(o.partitions)})
	if err != nil {
		return err
	}
	defer b.Close()

	// The processor runs on the simulated clock, the pacer's: idleness is measured and idle
	// partitions' watermarks advance in simulated time, so that once the feed ends its last
	// windows close within seconds, and computed_at and updated_at read as simulated times.
	pacer := &feed.Pacer{Speed: o.speed}
	pacer.Anchor(start, time.Now())
	figs := figures.New()
	p, stopMetrics, err := demoPipeline(ctx, o, b.Addr(), pacer, figs, log, pool, out)
	if err != nil {
		return err
	}
	defer stopMetrics()
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRun()
	runDone := make(chan error, 1)
	go func() { runDone <- p.Run(runCtx) }()

	gen, err := feed.New(feed.Config{Seed: uint64(o.seed), Start: start, Duration: o.duration, Scale: o.scale,
		DisorderShare: feed.SuggestedDisorderShare, LateShare: o.lateShare, MalformedShare: o.malformedShare})
	if err != nil {
		return err
	}
	prod, err := produce.New(ctx, b.Addr(), []string{pos, pred}, quietKafka())
	if err != nil {
		return err
	}
	defer prod.Close(5 * time.Second)

	// The feed plays on its own goroutine; this one draws the progress line.
	play := &demoPlay{}
	feedDone := make(chan error, 1)
	go func() { feedDone <- play.run(ctx, gen, pacer, prod) }()
	line := newDemoLine(out, figs, play)
	feedErr, runErr := awaitDemo(ctx, figs, play, runDone, feedDone, line.show)
	line.show()
	line.prog.done()
	if ctx.Err() != nil {
		fmt.Fprintln(out, "interrupted: shutting down gracefully (Ctrl-C again to abort)")
		stopAbort := secondSignal(ctx, p.Abort)
		defer stopAbort()
	}
	stopRun()
	if runErr == nil {
		runErr = <-runDone
	}
	if err := errors.Join(feedErr, runErr); err != nil {
		return err
	}
	return report(context.WithoutCancel(ctx), out, reportInput{
		pool: pool, pipe: p, schema: o.schema, dsn: o.dsn, gen: gen, figures: figs.Snapshot(), produced: play.produced.Load(),
		counters: p.Counters(), began: began, start: start,
	})
}

// demoSchema connects to Postgres and drops and recreates the demo's schema.
func demoSchema(ctx context.Context, dsn, schema string) (*pgxpool.Pool, error) {
	pool, err := connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("%w\n(the demo needs Postgres: set DATABASE_URL or --dsn)", err)
	}
	ident := pgx.Identifier{schema}.Sanitize()
	if _, err := pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+ident+" CASCADE; CREATE SCHEMA "+ident); err != nil {
		pool.Close()
		return nil, fmt.Errorf("preparing schema %s: %w", schema, err)
	}
	return pool, nil
}

// demoPipeline builds the demo's processor against the broker at addr, on the pacer's clock,
// with figs among its hooks, and serves its metrics when o asks for them. It returns what
// stops the metrics endpoint.
func demoPipeline(ctx context.Context, o demoFlags, addr string, pacer *feed.Pacer, figs *figures.Figures, log *slog.Logger,
	pool *pgxpool.Pool, out io.Writer) (*pipeline.Pipeline, func(), error) {
	reg := prometheus.NewRegistry()
	m, err := prom.New(reg)
	if err != nil {
		return nil, nil, err
	}
	clock := func() time.Time {
		t, _ := pacer.SimTime(time.Now())
		return t
	}
	p, err := pipeline.New(ctx, pipeline.Config{
		Brokers: addr, Group: "ov-demo", Migrate: true, FlushInterval: o.flushInterval,
		IdleTimeout: demoIdleTimeout(o.speed), ProcessorID: "ov-demo", Kafka: quietKafka(), Logger: log, Hooks: []consumer.Hook{figs},
		Metrics: m,
		Clock:   clock,
	}, pipeline.Postgres(pool, o.schema))
	if err != nil {
		return nil, nil, err
	}
	if o.metricsAddr == "" {
		return p, func() {}, nil
	}
	stop, bound, err := serveMetrics(o.metricsAddr, reg, p.Health, log)
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(out, "metrics: http://%s/metrics\n", bound)
	return p, stop, nil
}

// demoPlay plays the feed into the broker and tells how far it got.
type demoPlay struct {
	produced atomic.Int64 // records sent
	simNow   atomic.Int64 // the timestamp of the last record sent, Unix nanoseconds; 0 before
}

// run sends gen's records through prod, each at its timestamp on the pacer's clock, then
// flushes the producer (30 s at most).
func (d *demoPlay) run(ctx context.Context, gen *feed.Generator, pacer *feed.Pacer, prod *produce.Producer) error {
	for {
		r, ok := gen.Next()
		if !ok {
			fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			return prod.Flush(fctx)
		}
		if err := pacer.Wait(ctx, r.Timestamp); err != nil {
			return err
		}
		if err := prod.Send(ctx, r); err != nil {
			return err
		}
		d.produced.Add(1)
		d.simNow.Store(r.Timestamp.UnixNano())
	}
}

// demoLine draws the demo's progress line from the figures and the feed's progress.
type demoLine struct {
	prog         *progress
	figs         *figures.Figures
	play         *demoPlay
	lastConsumed int64
	lastAt       time.Time
}

func newDemoLine(out io.Writer, figs *figures.Figures, play *demoPlay) *demoLine {
	return &demoLine{prog: newProgress(out), figs: figs, play: play, lastAt: time.Now()}
}

// show draws the line; the rate is that since the previous line.
func (l *demoLine) show() {
	s := l.figs.Snapshot()
	now := time.Now()
	rate := float64(s.Consumed-l.lastConsumed) / now.Sub(l.lastAt).Seconds()
	l.lastConsumed, l.lastAt = s.Consumed, now
	sim := "--:--:--"
	if n := l.play.simNow.Load(); n != 0 {
		sim = time.Unix(0, n).In(feed.CET()).Format("15:04:05")
	}
	lag := "?"
	if s.Lag >= 0 && s.Partitions > 0 {
		lag = count(s.Lag)
	}
	l.prog.show(fmt.Sprintf("sim %s | %s ev/s | lag %s | open windows %s | committed %s | rows %s | late %s | dead-lettered %s",
		sim, count(int64(rate)), lag, count(int64(s.OpenKeys)), count(s.Committed), count(s.Partials+s.StateRows),
		count(s.Late), count(s.DeadLettered)))
}

// awaitDemo calls line every second until the demo is over: everything the feed produced is
// consumed, written and committed (or a minute has passed since it was consumed, in case a
// partition cannot finish), the processor stopped, the feed failed, or ctx ended. It returns
// the feed's error and the processor's (an unexpected stop is one).
func awaitDemo(ctx context.Context, figs *figures.Figures, play *demoPlay, runDone, feedDone <-chan error, line func()) (feedErr, runErr error) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	feedRunning, caughtUp := true, false
	var caughtSince time.Time
	for {
		select {
		case <-ctx.Done():
			return nil, nil
		case err := <-runDone:
			if err == nil {
				err = errors.New("the processor stopped unexpectedly")
			}
			return nil, err
		case err := <-feedDone:
			feedRunning = false
			if err != nil {
				return err, nil
			}
		case <-tick.C:
			line()
			if feedRunning {
				continue
			}
			// Done when everything is consumed, written and committed: idle partitions close
			// their last windows on the simulated clock.
			s := figs.Snapshot()
			if !caughtUp && s.Consumed >= play.produced.Load() && s.Lag == 0 {
				caughtUp, caughtSince = true, time.Now()
			}
			if caughtUp && (s.Pending == 0 || time.Since(caughtSince) > time.Minute) {
				return nil, nil
			}
		}
	}
}

type reportInput struct {
	pool     *pgxpool.Pool
	pipe     *pipeline.Pipeline
	schema   string
	dsn      string
	gen      *feed.Generator
	figures  figures.Snapshot
	counters consumer.Counters
	produced int64
	began    time.Time
	start    time.Time
}

// report prints the demo's report: the counts, the most delayed lines and stations of the last
// complete window and the whole network's figures in it, and psql queries to look further.
func report(ctx context.Context, out io.Writer, in reportInput) error {
	cet := feed.CET()
	fmt.Fprintf(out, "\nDone in %s: simulated %s to %s CET.\n", time.Since(in.began).Round(time.Second),
		in.start.In(cet).Format("15:04"), in.start.Add(in.gen.Config().Duration).In(cet).Format("15:04"))
	reportCounts(out, in)

	through, ok, err := in.pipe.Sink().CompleteThrough(ctx, feed.DefaultPredictionsTopic)
	if err != nil {
		return err
	}
	table := pgx.Identifier{in.schema, tables.AggregatesTable}.Sanitize()
	var wstart, wend time.Time
	if ok {
		err = in.pool.QueryRow(ctx, `SELECT window_start, window_end FROM `+table+
			` WHERE dimension = 'network' AND window_end <= $1 ORDER BY window_start DESC LIMIT 1`, through).Scan(&wstart, &wend)
	}
	if !ok || errors.Is(err, pgx.ErrNoRows) {
		fmt.Fprintln(out, "\nNo window is complete yet: play longer (--duration).")
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nLast complete window: %s-%s CET (every partition has closed through %s)\n",
		wstart.In(cet).Format("15:04"), wend.In(cet).Format("15:04"), through.In(cet).Format("15:04:05"))
	for _, dim := range []struct{ name, title string }{{tables.DimLine, "Most delayed lines"}, {tables.DimStation, "Most delayed stations"}} {
		if err := reportMostDelayed(ctx, out, in.pool, table, wstart, dim.name, dim.title); err != nil {
			return err
		}
	}
	var cnt int64
	var mean, p90 float64
	err = in.pool.QueryRow(ctx, `SELECT event_count, mean_delay_s, p90_delay_s FROM `+table+
		` WHERE window_start = $1 AND dimension = 'network'`, wstart).Scan(&cnt, &mean, &p90)
	if err == nil {
		fmt.Fprintf(out, "  The whole network: %d arrivals, mean delay %.0f s, P90 %.0f s (on time: at most %.0f s late)\n",
			cnt, mean, p90, event.OnTimeThreshold.Seconds())
	}
	reportQueries(out, in.dsn, in.schema, wstart)
	return nil
}

// reportCounts prints what was produced, consumed, dead-lettered, written and committed.
func reportCounts(out io.Writer, in reportInput) {
	c, s, gs := in.counters, in.figures, in.gen.Stats()
	fmt.Fprintln(out, "\nCounts")
	fmt.Fprintf(out, "  produced       %12s records (%s positions, %s predictions; %s generated malformed, %s meant late)\n",
		count(in.produced), count(int64(gs.Positions)), count(int64(gs.Predictions)), count(int64(gs.Malformed)), count(int64(gs.Late)))
	fmt.Fprintf(out, "  consumed       %12s = admitted %s + late %s + dead-lettered %s  (%s)\n", count(c.Consumed),
		count(c.Admitted), count(c.Late), count(c.DeadLettered), adds(c.Consumed == c.Admitted+c.Late+c.DeadLettered))
	fmt.Fprintf(out, "  dead letters   %12s confirmed by the broker on dlq.<topic>\n", count(s.DeadLettersDelivered))
	fmt.Fprintf(out, "  sink writes    %12s (%s partials, %s state rows); %s offset commits\n", count(c.Writes),
		count(s.Partials), count(s.StateRows), count(c.Commits))
	fmt.Fprintf(out, "  committed      %12s offsets in all; %s messages left uncommitted\n", count(s.Committed), count(s.Pending))
}

// reportMostDelayed prints the five rows of the dimension with the highest mean delay (at
// least 3 arrivals) in the window that starts at wstart.
func reportMostDelayed(ctx context.Context, out io.Writer, pool *pgxpool.Pool, table string, wstart time.Time, dim, title string) error {
	rows, err := pool.Query(ctx, `SELECT dimension_id, coalesce(operator, ''), event_count, mean_delay_s, p90_delay_s, max_delay_s
		FROM `+table+` WHERE window_start = $1 AND dimension = $2 AND event_count >= 3
		ORDER BY mean_delay_s DESC, dimension_id LIMIT 5`, wstart, dim)
	if err != nil {
		return err
	}
	defer rows.Close()
	fmt.Fprintf(out, "  %s (at least 3 arrivals):\n", title)
	fmt.Fprintf(out, "    %-16s %-8s %7s %10s %10s %10s\n", dim, "operator", "count", "mean (s)", "P90 (s)", "max (s)")
	n := 0
	for rows.Next() {
		var id, op string
		var cnt int64
		var mean, p90, mx float64
		if err := rows.Scan(&id, &op, &cnt, &mean, &p90, &mx); err != nil {
			return err
		}
		fmt.Fprintf(out, "    %-16s %-8s %7d %10.0f %10.0f %10.0f\n", id, op, cnt, mean, p90, mx)
		n++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if n == 0 {
		fmt.Fprintln(out, "    (none with 3 arrivals)")
	}
	return nil
}

// reportQueries prints psql commands that look further into the demo's tables.
func reportQueries(out io.Writer, dsn, schema string, wstart time.Time) {
	q := func(sql string) string { return fmt.Sprintf("  psql %q -c %q\n", redactDSN(dsn), sql) }
	ws := wstart.UTC().Format("2006-01-02 15:04:05+00")
	fmt.Fprintf(out, "\nLook further (tables in schema %s):\n", schema)
	fmt.Fprint(out, q(fmt.Sprintf("SELECT dimension_id, operator, event_count, round(mean_delay_s) AS mean_s, p90_delay_s "+
		"FROM %s.delay_aggregates WHERE dimension = 'line' AND window_start = '%s' ORDER BY p90_delay_s DESC LIMIT 10", schema, ws)))
	fmt.Fprint(out, q(fmt.Sprintf("SELECT window_start, event_count, round(mean_delay_s) AS mean_s, p90_delay_s, complete "+
		"FROM %s.delay_aggregates_status WHERE dimension = 'network' ORDER BY window_start", schema)))
	fmt.Fprint(out, q(fmt.Sprintf("SELECT operator, count(*) AS vehicles, max(observed_at) FROM %s.vehicle_latest GROUP BY operator ORDER BY 2 DESC", schema)))
	fmt.Fprint(out, q(fmt.Sprintf("SELECT trip_id, line, stop, delay_s FROM %s.trip_delay_latest ORDER BY delay_s DESC LIMIT 10", schema)))
}

func adds(ok bool) string {
	if ok {
		return "adds up"
	}
	return "DOES NOT ADD UP"
}

// count formats n with thousands separators.
func count(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// progress draws a status line: rewritten in place on a terminal, one line every few seconds
// otherwise (a log file).
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	tty   bool
	width int
	last  time.Time
	line  string // the latest line, and whether it was printed (off a terminal)
	shown bool
}

func newProgress(w io.Writer) *progress {
	tty := false
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return &progress{w: w, tty: tty}
}

func (p *progress) show(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.tty {
		p.line, p.shown = s, false
		if time.Since(p.last) >= 5*time.Second {
			p.last, p.shown = time.Now(), true
			fmt.Fprintln(p.w, s)
		}
		return
	}
	pad := ""
	if n := p.width - len(s); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	p.width = len(s)
	fmt.Fprintf(p.w, "\r%s%s", s, pad)
}

func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.tty:
		fmt.Fprintln(p.w)
	case !p.shown && p.line != "":
		fmt.Fprintln(p.w, p.line)
	}
}
