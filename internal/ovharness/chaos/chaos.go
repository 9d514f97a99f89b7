package chaos

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/examples/ov/event"
	"github.com/streamledger/streamledger/examples/ov/feed"
	"github.com/streamledger/streamledger/examples/ov/pipeline"
	"github.com/streamledger/streamledger/internal/ovharness/broker"
	"github.com/streamledger/streamledger/internal/ovharness/killpoints"
	"github.com/streamledger/streamledger/internal/ovharness/oracle"
	"github.com/streamledger/streamledger/internal/ovharness/verify"
)

// The scenarios, in the order Run plays them.
const (
	ScenarioKill             = "kill"
	ScenarioGroupRange       = "group-range"
	ScenarioGroupCooperative = "group-cooperative"
	ScenarioPostgres         = "postgres"
	ScenarioIdle             = "idle-partition"
	ScenarioFaultPoints      = "fault-points"
	ScenarioBrokerRestart    = "broker-restart"
	ScenarioBrokers          = "brokers"
	ScenarioProtocolErrors   = "protocol-errors"
	ScenarioZombie           = "zombie"
	ScenarioGroupConsumer    = "group-consumer"
	ScenarioRapidKills       = "rapid-kills"
	ScenarioRetention        = "retention"
)

// Scenarios lists every scenario name.
func Scenarios() []string {
	return []string{ScenarioKill, ScenarioGroupRange, ScenarioGroupCooperative, ScenarioPostgres, ScenarioIdle, ScenarioFaultPoints,
		ScenarioBrokerRestart, ScenarioBrokers, ScenarioProtocolErrors, ScenarioZombie, ScenarioGroupConsumer, ScenarioRapidKills, ScenarioRetention}
}

// The processor's timing in every scenario. Its clock runs ClockRate times faster than the wall
// clock (the "run" command's --clock-rate test hook), so that an idle partition's windows,
// which close when the partition's event clock has moved window + lateness past its last
// event, close within seconds instead of seven minutes.
const (
	ClockRate     = 200
	FlushInterval = 200 * time.Millisecond
	// BusyIdleTimeout (36 s of wall time) keeps partitions from going idle while the feed is
	// being produced: a partition that went idle between two records would judge the second
	// against a watermark the oracle never had.
	BusyIdleTimeout = 2 * time.Hour
	// DrainIdleTimeout (1 s of wall time) lets every partition go idle once the feed is in.
	DrainIdleTimeout = 200 * time.Second
	// IdleScenarioTimeout (2 s of wall time) is the idle timeout of the idle-partition
	// scenario, during production.
	IdleScenarioTimeout = 400 * time.Second
	group               = "ov-chaos"
	// A member killed during a rebalance holds it for max.poll.interval.ms (the rebalance
	// timeout), so the harness keeps it short, and the write timeout under half of it.
	sessionProps = "session.timeout.ms=6000,heartbeat.interval.ms=500,max.poll.interval.ms=10000"
	// consumerProps, consumerSession and consumerHeartbeat are the same for KIP-848 groups,
	// whose session and heartbeat the broker sets.
	consumerProps     = "max.poll.interval.ms=10000"
	consumerSession   = 6 * time.Second
	consumerHeartbeat = 500 * time.Millisecond
	writeTimeout      = 4 * time.Second
)

// Size is how much a run does.
type Size struct {
	Name string
	// Feed is the simulated feed, the same for every scenario (the idle-partition scenario
	// drops the second half of partition 0).
	Feed       feed.Config
	Partitions int32
	// Span is the wall-clock time over which the feed is produced, while faults happen.
	Span time.Duration
	// Kills is the number of kill -9 of scenario kill; GroupChanges the joins, leaves and kills
	// of each group scenario; Terminations the rounds of pg_terminate_backend; FaultKills the
	// processes killed by a fault point.
	Kills, GroupChanges, Terminations, FaultKills int
	// KillAfter bounds the random life of each processor of scenario kill: it is killed that
	// long after its start.
	KillAfter [2]time.Duration
	// GroupRebalances is the least number of rebalances (group generations the broker formed)
	// each group scenario makes: it goes on changing members until the broker has run them.
	GroupRebalances int
	// RestartPostgres stops and starts the Postgres server in the postgres scenario (never in
	// CI's short run: other packages' tests share the server).
	RestartPostgres bool
	// DrainTimeout bounds the wait for every offset to be committed after a scenario.
	DrainTimeout time.Duration
	// BrokerRestarts is the number of kill -9 of the broker in scenario broker-restart; each
	// keeps it down for BrokerDown, and the last also stops a processor (its shutdown timeout
	// 1 s) while the broker is down for ShutdownProbeDown.
	BrokerRestarts    int
	BrokerDown        [2]time.Duration
	ShutdownProbeDown time.Duration
	// Zombies is the number of processors stopped (SIGSTOP) past their session timeout in
	// scenario zombie, each for ZombieFor.
	Zombies   int
	ZombieFor time.Duration
	// RapidKills are killed within RapidKillsWithin in scenario rapid-kills, whose processors
	// run with RapidKafka (librdkafka's defaults when empty); the group must form a generation
	// within RapidRecovery of the last kill.
	RapidKills       int
	RapidKillsWithin time.Duration
	RapidKafka       string
	RapidRecovery    time.Duration
}

func baseFeed() feed.Config {
	return feed.Config{Seed: 2026, Start: time.Date(2026, 3, 10, 6, 0, 0, 0, feed.CET()), WindowSize: 5 * time.Minute,
		Lateness: 2 * time.Minute, DisorderShare: 0.1, LateShare: 0.01, MalformedShare: 0.004}
}

// Short is the size of `make test`: about 60,000 records, each scenario in 15 to 35 seconds.
// Its kills come faster than the full run's (0.2 to 1.4 s into each life instead of 0.3 to
// 2.5 s) so that the 20 fit in the span of its feed.
func Short() Size {
	f := baseFeed()
	f.Scale, f.Duration = 0.02, 3*time.Hour
	return Size{Name: "short", Feed: f, Partitions: 6, Span: 12 * time.Second, Kills: 20, GroupChanges: 10, Terminations: 15,
		FaultKills: 10, KillAfter: [2]time.Duration{200 * time.Millisecond, 1400 * time.Millisecond}, GroupRebalances: 10,
		DrainTimeout: 2 * time.Minute, BrokerRestarts: 2, BrokerDown: [2]time.Duration{500 * time.Millisecond, 2 * time.Second},
		ShutdownProbeDown: 5 * time.Second, Zombies: 1, ZombieFor: 9 * time.Second, RapidKills: 6,
		RapidKillsWithin: 8 * time.Second, RapidKafka: "session.timeout.ms=6000", RapidRecovery: 30 * time.Second}
}

// Full is the size of `make chaos`: over a million records.
func Full() Size {
	f := baseFeed()
	f.Scale, f.Duration = 0.3, 3*time.Hour+30*time.Minute
	return Size{Name: "full", Feed: f, Partitions: 8, Span: 100 * time.Second, Kills: 30, GroupChanges: 16, Terminations: 60,
		FaultKills: 20, KillAfter: [2]time.Duration{300 * time.Millisecond, 2500 * time.Millisecond}, GroupRebalances: 10,
		RestartPostgres: true, DrainTimeout: 6 * time.Minute, BrokerRestarts: 5, BrokerDown: [2]time.Duration{time.Second, 6 * time.Second},
		ShutdownProbeDown: 15 * time.Second, Zombies: 3, ZombieFor: 10 * time.Second, RapidKills: 6, RapidKillsWithin: 30 * time.Second,
		RapidRecovery: 3 * time.Minute}
}

// Config configures Run.
type Config struct {
	// Binary is the ov binary, run as "ov broker" and "ov run".
	Binary string
	// DSN is the Postgres server; each scenario creates a schema of its own and drops it.
	DSN  string
	Size Size
	// Scenarios to play; empty means all.
	Scenarios []string
	// WorkDir receives the processes' logs.
	WorkDir string
	// Progress receives a line per step; nil discards.
	Progress io.Writer
	// Seed drives the random instants of faults.
	Seed uint64
	// BrokerFlags are added to every "ov broker" command line (--no-expiry reproduces the
	// classic-protocol wedge in scenario rapid-kills).
	BrokerFlags []string
	// PostgresCluster stops and starts the server when Size.RestartPostgres is set; nil
	// means pg_ctlcluster on the main cluster of the only version in /etc/postgresql
	// ([Cluster]).
	PostgresCluster func(ctx context.Context, action string) error
}

// Result is one scenario's row of the table.
type Result struct {
	Scenario string
	// Messages is the number of records produced.
	Messages int
	// Processes counts the processor processes started.
	Processes int
	// Rebalances counts the group generations the broker formed while the scenario's faults
	// ran (the drain's excluded), from the lines "ov broker" prints for each.
	Kills, Rebalances, Outages int
	// BrokerRestarts counts the broker kill -9s and restarts; Moves the partition leader
	// moves (one per shuffle of every leader or move of one), group coordinator moves and node
	// removals.
	BrokerRestarts, Moves int
	// Faults counts the requests the broker failed on purpose, by kind (commit, fetch, dlq,
	// heartbeat).
	Faults map[string]int
	// Lost counts the partitions processors gave up as lost (no final write or commit), from
	// their logs; Zombies the processors stopped past their session timeout and resumed.
	Lost, Zombies int
	// Mismatched counts rows (and dead letters, and accounting identities) that differ from
	// the oracle; Mismatches holds the first of them.
	Mismatched int
	Mismatches []string
	// MaxUncommitted and MaxOpenWindows are the highest processor_uncommitted_messages and
	// processor_open_windows any processor exported.
	MaxUncommitted, MaxOpenWindows int64
	// PeakRSSKB is the highest peak resident set of any processor process.
	PeakRSSKB int64
	Wall      time.Duration
	// Notes say what the scenario showed beyond the table.
	Notes []string
	// Err is set when the scenario could not be played to the end.
	Err error
}

// faultsColumn formats the injected faults by kind, "-" for none.
func faultsColumn(f map[string]int) string {
	var kinds []string
	for k, n := range f {
		if n > 0 {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
		}
	}
	if len(kinds) == 0 {
		return "-"
	}
	slices.Sort(kinds)
	return strings.Join(kinds, ", ")
}

// OK reports whether the scenario ran and matched the oracle.
func (r Result) OK() bool { return r.Err == nil && r.Mismatched == 0 }

// Run plays the scenarios one after the other and returns their results.
func Run(ctx context.Context, cfg Config) ([]Result, error) {
	if cfg.Binary == "" || cfg.WorkDir == "" {
		return nil, errors.New("chaos: Binary and WorkDir are required")
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	if cfg.PostgresCluster == nil {
		c, err := Cluster("")
		if err != nil {
			c = func(context.Context, string) error { return err }
		}
		cfg.PostgresCluster = c
	}
	names := cfg.Scenarios
	if len(names) == 0 {
		names = Scenarios()
	}
	for _, n := range names {
		if !slices.Contains(Scenarios(), n) {
			return nil, fmt.Errorf("chaos: unknown scenario %q: want one of %v", n, Scenarios())
		}
	}
	pool, err := pgxpool.New(ctx, cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("chaos: postgres: %w", err)
	}
	defer pool.Close()
	if err := pool.Ping(ctx); err != nil {
		return nil, fmt.Errorf("chaos: postgres: %w", err)
	}
	t0 := time.Now()
	records, _, err := feed.Generate(cfg.Size.Feed)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(cfg.Progress, "feed: %d records over %v at scale %v, %d partitions (generated in %v)\n", len(records),
		cfg.Size.Feed.Duration, cfg.Size.Feed.Scale, cfg.Size.Partitions, time.Since(t0).Round(time.Millisecond))
	h := &harness{cfg: cfg, pool: pool, rng: rand.New(rand.NewPCG(cfg.Seed, 0x0c4a05))}
	var out []Result
	for _, n := range names {
		if ctx.Err() != nil {
			break
		}
		res := h.scenario(ctx, n, records)
		fmt.Fprintf(cfg.Progress, "%s: %d mismatched, %d kills, %d rebalances, %d outages in %v%s\n", n, res.Mismatched, res.Kills,
			res.Rebalances, res.Outages, res.Wall.Round(100*time.Millisecond), errSuffix(res.Err))
		out = append(out, res)
	}
	return out, ctx.Err()
}

func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}

type harness struct {
	cfg  Config
	pool *pgxpool.Pool
	mu   sync.Mutex
	rng  *rand.Rand
}

func (h *harness) randDur(lo, hi time.Duration) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return lo + time.Duration(h.rng.Int64N(int64(hi-lo)+1))
}

func (h *harness) randN(n int) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rng.IntN(n)
}

// scene is one scenario being played: its broker, schema, processors and gauges.
type scene struct {
	h    *harness
	name string
	spec spec
	res  *Result
	// records is everything produced, in order; first and later are its two parts in the idle
	// scenario (first is all of it elsewhere).
	records, first, later []feed.Record
	ocfg                  oracle.Config
	oracle                *oracle.Result
	// lost are the ranges the retention scenario deleted before any processor read them.
	lost []oracle.LostRange

	addr       string // bootstrap list of the broker's nodes
	brokerArgs []string
	broker     *proc
	admin      *broker.Client
	kc         *kafkaClient
	schema     string
	appName    string
	dsn        string
	logDir     string
	g          gauges
	mu         sync.Mutex
	procs      []*proc
	count      int
	scrapeCx   context.Context
}

// spec is what a scenario needs besides its body.
type spec struct {
	body func(s *scene, ctx context.Context) error
	// nodes is the number of broker nodes; zero means one.
	nodes int
	// persist runs the broker with --data-dir, so that it can be killed and started again.
	persist bool
	// protocol is every processor's group protocol, the drain's included; empty: classic.
	protocol string
	// static is the drain processor's group.instance.id: the scenario's static member, which
	// it replaces at once.
	static string
	// readBack computes the oracle from what the topics hold once the feed is produced: a
	// broker killed between storing a batch and acknowledging it can have the producer's
	// retry stored again (kfake saves the idempotent producer's sequences only when it
	// stops), so the topics may hold a record twice; that is the processors' input.
	readBack bool
	// lostContinue runs every processor with --lost-records continue.
	lostContinue bool
}

func specs() map[string]spec {
	group := func(assignor string) func(*scene, context.Context) error {
		return func(s *scene, ctx context.Context) error { return s.group(ctx, assignor) }
	}
	return map[string]spec{
		ScenarioKill:             {body: (*scene).kills, static: killStatic},
		ScenarioGroupRange:       {body: group("range")},
		ScenarioGroupCooperative: {body: group("cooperative-sticky")},
		ScenarioPostgres:         {body: (*scene).postgres},
		ScenarioIdle:             {body: (*scene).idle},
		ScenarioFaultPoints:      {body: (*scene).faultPoints, static: faultStatic},
		ScenarioBrokerRestart:    {body: (*scene).brokerRestarts, persist: true, readBack: true},
		ScenarioBrokers:          {body: (*scene).moves, nodes: 3},
		ScenarioProtocolErrors:   {body: (*scene).protocolErrors},
		ScenarioZombie:           {body: (*scene).zombies},
		ScenarioGroupConsumer:    {body: group(""), protocol: consumerProtocol},
		ScenarioRapidKills:       {body: (*scene).rapidKills},
		ScenarioRetention:        {body: (*scene).retention, lostContinue: true},
	}
}

// consumerProtocol is librdkafka's group.protocol of KIP-848.
const consumerProtocol = "consumer"

func (h *harness) scenario(ctx context.Context, name string, all []feed.Record) (res Result) {
	res = Result{Scenario: name, Faults: map[string]int{}}
	start := time.Now()
	defer func() { res.Wall = time.Since(start) }()
	s, err := h.newScene(name, all, &res)
	if err != nil {
		res.Err = err
		return res
	}
	scrapeCtx, stopScrape := context.WithCancel(ctx)
	defer stopScrape()
	s.scrapeCx = scrapeCtx
	if err := s.setUp(ctx); err != nil {
		res.Err = err
		s.tearDown()
		return res
	}
	defer s.tearDown()
	if err := s.spec.body(s, ctx); err != nil {
		res.Err = err
		return res
	}
	if res.Rebalances, err = generations(s.brokerLog(), group); err != nil {
		s.note("%v", err)
	}
	if s.spec.readBack {
		if err := s.readBack(ctx); err != nil {
			res.Err = err
			return res
		}
	}
	if err := s.drain(ctx, s.spec.static); err != nil {
		res.Err = err
		return res
	}
	s.check(ctx)
	res.Lost = s.countLogs(pipeline.LostMessage)
	res.MaxUncommitted = s.g.uncommitted.Load()
	res.MaxOpenWindows = s.g.openWindows.Load()
	res.PeakRSSKB = s.g.rssKB.Load()
	for _, p := range s.procs {
		if p.name != "broker" {
			res.PeakRSSKB = max(res.PeakRSSKB, p.peakRSS())
		}
	}
	return res
}

// newScene prepares a scenario: its feed, the oracle, its schema's name and its log directory.
func (h *harness) newScene(name string, all []feed.Record, res *Result) (*scene, error) {
	records := all
	var later []feed.Record
	switch name {
	case ScenarioIdle:
		records, later = splitIdle(all, h.cfg.Size.Partitions, 0, h.cfg.Size.Feed.Start.Add(h.cfg.Size.Feed.Duration))
	case ScenarioRetention:
		records, later = all[:len(all)/2:len(all)/2], all[len(all)/2:]
	}
	// What the broker receives, in this order: the idle scenario produces the withheld part
	// last; every partition keeps its records' order.
	produced := append(records[:len(records):len(records)], later...)
	res.Messages = len(produced)
	dec, err := event.NewDecoder(event.Config{})
	if err != nil {
		return nil, err
	}
	ocfg := oracle.Config{PositionsTopic: feed.DefaultPositionsTopic, PredictionsTopic: feed.DefaultPredictionsTopic,
		Partitions: h.cfg.Size.Partitions, WindowSize: h.cfg.Size.Feed.WindowSize, Lateness: h.cfg.Size.Feed.Lateness, Decoder: dec}
	or, err := oracle.Compute(ocfg, produced)
	if err != nil {
		return nil, err
	}
	s := &scene{h: h, name: name, spec: specs()[name], res: res, records: produced, first: records, later: later, ocfg: ocfg,
		oracle: or, schema: fmt.Sprintf("chaos_%s_%d", strings.ReplaceAll(name, "-", "_"), time.Now().UnixNano()%1_000_000_000)}
	s.appName = s.schema
	s.logDir = filepath.Join(h.cfg.WorkDir, name)
	if err := os.MkdirAll(s.logDir, 0o755); err != nil {
		return nil, err
	}
	if s.dsn, err = withAppName(h.cfg.DSN, s.appName); err != nil {
		return nil, err
	}
	return s, nil
}

// splitIdle splits the feed of the idle-partition scenario in two. The first part is what is
// produced while partition p (of both topics) is silent: every record delivered before the
// feed's end (a time), except p's after the middle of the feed. The second part is produced
// once p's idle advance is final: p's withheld records and the sparse tail of delayed
// predictions of every partition (delivered after the feed's end), in feed order, so every
// partition keeps its order. The tail waits because under the scenario's short idle timeout
// a partition goes quiet in it long enough to go idle, and an advance that the harness did
// not freeze and observe is one the oracle cannot know.
func splitIdle(records []feed.Record, partitions, p int32, end time.Time) (first, later []feed.Record) {
	if len(records) == 0 {
		return nil, nil
	}
	start := records[0].Timestamp
	mid := start.Add(end.Sub(start) / 2)
	first = make([]feed.Record, 0, len(records))
	for _, r := range records {
		if !r.Timestamp.Before(end) || (feed.Partition(r.Key, partitions) == p && r.Timestamp.After(mid)) {
			later = append(later, r)
			continue
		}
		first = append(first, r)
	}
	return first, later
}

func withAppName(dsn, app string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", errors.New("chaos: the DSN must be a postgres:// URL (to set application_name)")
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

func (s *scene) note(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.res.Notes = append(s.res.Notes, fmt.Sprintf(format, args...))
}

func (s *scene) progress(format string, args ...any) {
	fmt.Fprintf(s.h.cfg.Progress, "  %s: %s\n", s.name, fmt.Sprintf(format, args...))
}

func (s *scene) brokerLog() string { return filepath.Join(s.logDir, "broker.log") }

func (s *scene) setUp(ctx context.Context) error {
	nodes := max(s.spec.nodes, 1)
	var addrs []string
	for range nodes {
		port, err := freePort()
		if err != nil {
			return err
		}
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", port))
	}
	s.addr = strings.Join(addrs, ",")
	adminPort, err := freePort()
	if err != nil {
		return err
	}
	adminAddr := fmt.Sprintf("127.0.0.1:%d", adminPort)
	s.admin = broker.NewClient(adminAddr)
	s.brokerArgs = []string{"broker", "--addr", s.addr, "--partitions", fmt.Sprint(s.h.cfg.Size.Partitions), "--admin-addr", adminAddr}
	s.brokerArgs = append(s.brokerArgs, s.h.cfg.BrokerFlags...)
	if s.spec.persist {
		s.brokerArgs = append(s.brokerArgs, "--data-dir", filepath.Join(s.logDir, "broker-data"))
	}
	if s.spec.protocol == consumerProtocol {
		s.brokerArgs = append(s.brokerArgs, "--consumer-session-timeout", consumerSession.String(),
			"--consumer-heartbeat-interval", consumerHeartbeat.String())
	}
	if err := s.startBroker(ctx); err != nil {
		return err
	}
	if s.kc, err = newKafkaClient(s.addr); err != nil {
		return err
	}
	if _, err := s.h.pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{s.schema}.Sanitize()); err != nil {
		return fmt.Errorf("chaos: creating schema %s: %w", s.schema, err)
	}
	return nil
}

// startBroker starts the broker process (again, after a kill: from its data directory) and
// waits until every node and the admin endpoint accept connections.
func (s *scene) startBroker(ctx context.Context) error {
	var err error
	s.broker, err = start("broker", s.h.cfg.Binary, s.brokerArgs, nil, s.brokerLog(), "")
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for _, a := range append(strings.Split(s.addr, ","), s.admin.Addr) {
		if err := waitPort(wctx, a, s.broker); err != nil {
			return err
		}
	}
	return nil
}

func (s *scene) tearDown() {
	for _, p := range s.live() {
		p.resume()
		p.kill()
	}
	if s.kc != nil {
		s.kc.close()
	}
	if s.broker != nil {
		s.broker.term(10 * time.Second)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.h.pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{s.schema}.Sanitize()+" CASCADE"); err != nil {
		s.note("dropping schema %s: %v", s.schema, err)
	}
}

func (s *scene) live() []*proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*proc
	for _, p := range s.procs {
		if p.running() {
			out = append(out, p)
		}
	}
	return out
}

// procOpts vary a processor.
type procOpts struct {
	idle     time.Duration
	assignor string
	fault    string // $OV_FAULT
	wait     bool   // wait until it serves /metrics (its migrations are done)
	// static is the group.instance.id (static membership): a restarted process replaces its
	// killed predecessor at once instead of waiting for its session to expire.
	static string
	// flush is the flush interval (and commit cadence); zero means FlushInterval.
	flush time.Duration
	// kafka replaces the session timeouts the harness gives processors (sessionProps), set
	// means librdkafka's own (defaultTimeouts) or these properties.
	kafka           string
	defaultTimeouts bool
	// shutdown is --shutdown-timeout; zero means the runtime's default.
	shutdown time.Duration
	// writeTimeout is --write-timeout; zero means writeTimeout.
	writeTimeout time.Duration
}

// noWait returns o not waiting for the processor to serve.
func (o procOpts) noWait() procOpts {
	o.wait = false
	return o
}

// startProc starts an "ov run" processor named name.
func (s *scene) startProc(ctx context.Context, name string, o procOpts) (*proc, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	metrics := fmt.Sprintf("127.0.0.1:%d", port)
	s.mu.Lock()
	s.count++
	s.res.Processes++
	s.mu.Unlock()
	flush, caughtUp := FlushInterval, time.Duration(0)
	if o.flush > 0 {
		// A processor that must hold closed windows until a revocation never ticks early.
		flush, caughtUp = o.flush, -1
	}
	args := []string{"run", "--brokers", s.addr, "--group", group, "--dsn", s.dsn, "--schema", s.schema,
		"--flush-interval", flush.String(), "--flush-when-caught-up", caughtUp.String(), "--clock-rate", fmt.Sprint(ClockRate), "--idle-timeout", o.idle.String(),
		"--metrics-addr", metrics, "--processor-id", "chaos-" + name, "--window", s.h.cfg.Size.Feed.WindowSize.String(),
		"--lateness", s.h.cfg.Size.Feed.Lateness.String(), "--write-timeout", cmp.Or(o.writeTimeout, writeTimeout).String()}
	props := sessionProps
	switch {
	case o.defaultTimeouts:
		props = o.kafka
	case s.spec.protocol == consumerProtocol:
		// The broker sets a KIP-848 member's session and heartbeat.
		props = consumerProps
	}
	if o.static != "" {
		props = strings.TrimPrefix(props+",group.instance.id="+o.static, ",")
	}
	if props != "" {
		args = append(args, "--kafka", props)
	}
	if o.assignor != "" {
		args = append(args, "--assignor", o.assignor)
	}
	if s.spec.protocol != "" {
		args = append(args, "--group-protocol", s.spec.protocol)
	}
	if o.shutdown > 0 {
		args = append(args, "--shutdown-timeout", o.shutdown.String())
	}
	if s.spec.lostContinue {
		args = append(args, "--lost-records", "continue")
	}
	var env []string
	if o.fault != "" {
		env = append(env, killpoints.Env+"="+o.fault)
	}
	p, err := start(name, s.h.cfg.Binary, args, env, filepath.Join(s.logDir, "processor-"+name+".log"), metrics)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	go p.scrape(s.scrapeCx, &s.g, 100*time.Millisecond)
	if o.wait {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := waitPort(wctx, metrics, p); err != nil && !p.selfKilled() {
			return nil, err
		}
	}
	return p, nil
}

// produce plays the scenario's feed (its first part in the idle scenario) into the broker over
// the size's span, in the background.
func (s *scene) produce(ctx context.Context, onSent func(int)) <-chan error {
	done := make(chan error, 1)
	go func() {
		done <- s.kc.produce(ctx, s.first, s.h.cfg.Size.Partitions, s.h.cfg.Size.Span, onSent)
	}()
	return done
}

// drain stops the scenario's processors gracefully, starts one with a short idle timeout, and
// waits until every partition is committed through its last record: everything was written
// (every window closed once its partition went idle), every dead letter confirmed.
func (s *scene) drain(ctx context.Context, static string) error {
	for _, p := range s.live() {
		if !p.term(45 * time.Second) {
			desc, _ := p.exit()
			s.note("%s did not stop gracefully on SIGTERM: %s", p.name, desc)
		}
	}
	ends := map[oracle.Source]int64{}
	for src, p := range s.oracle.Partitions {
		ends[src] = p.Records
	}
	p, err := s.startProc(ctx, "drain", procOpts{idle: DrainIdleTimeout, wait: true, static: static})
	if err != nil {
		return err
	}
	deadline := time.Now().Add(s.h.cfg.Size.DrainTimeout)
	var behind []string
	for {
		behind = behind[:0]
		for _, topic := range []string{feed.DefaultPositionsTopic, feed.DefaultPredictionsTopic} {
			qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			c, err := s.kc.committed(qctx, group, topic, s.h.cfg.Size.Partitions)
			cancel()
			if err != nil {
				behind = append(behind, err.Error())
				continue
			}
			for part := range s.h.cfg.Size.Partitions {
				src := oracle.Source{Topic: topic, Partition: part}
				if c[part] != ends[src] {
					behind = append(behind, fmt.Sprintf("%s committed %d of %d", src, c[part], ends[src]))
				}
			}
		}
		if len(behind) == 0 {
			break
		}
		if !p.running() {
			desc, _ := p.exit()
			return fmt.Errorf("chaos: the drain processor exited (%s) with %v", desc, behind)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("chaos: not drained after %v: %v", s.h.cfg.Size.DrainTimeout, behind)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	if !p.term(45 * time.Second) {
		desc, _ := p.exit()
		s.note("the drain processor did not stop gracefully: %s", desc)
	}
	return nil
}

// check compares the tables and the dead letters with the oracle, and the accounting.
func (s *scene) check(ctx context.Context) {
	r := s.oracle
	rep, err := verify.Tables(ctx, s.h.pool, s.schema, r)
	if err != nil {
		s.res.Err = err
		return
	}
	var letters []dlq.DeadLetter
	var parts []int32
	for _, topic := range []string{feed.DefaultPositionsTopic, feed.DefaultPredictionsTopic} {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		l, p, err := s.kc.deadLetters(rctx, s.addr, topic, s.h.cfg.Size.Partitions)
		cancel()
		if err != nil {
			s.res.Err = err
			return
		}
		letters, parts = append(letters, l...), append(parts, p...)
	}
	letters, parts, mism := s.checkLost(letters, parts)
	verify.Letters(rep, r, letters, parts)
	for _, m := range rep.Mismatches {
		mism = append(mism, m.String())
	}
	// G3 across processes. Per-process counters overcount (a redelivered message is decided
	// again), so the identity is checked on what is stored: every offset is committed (drain),
	// the oracle classifies each record once (consumed = admitted + late + dead-lettered), the
	// distinct dead letters are the oracle's, and the network dimension, which every admitted
	// prediction feeds once, sums to the oracle's admitted predictions: a late prediction
	// admitted by mistake, or an admitted one lost, would change that sum.
	t := r.Total
	lost, lostMalformed := s.lostOffsets()
	if t.Consumed+lost != int64(len(s.records)) || t.Admitted+t.Late+t.DeadLettered != t.Consumed {
		mism = append(mism, fmt.Sprintf("accounting: oracle %+v for %d records, %d of them lost", t, len(s.records), lost))
	}
	var admittedPred, latePred, deadPred int64
	for src, p := range r.Partitions {
		if src.Topic == feed.DefaultPredictionsTopic {
			admittedPred += p.Admitted
			latePred += p.Late
			deadPred += p.DeadLettered
		}
	}
	if rep.AdmittedPredictions != admittedPred {
		mism = append(mism, fmt.Sprintf("accounting: network event_count sums to %d, the oracle admitted %d predictions",
			rep.AdmittedPredictions, admittedPred))
	}
	malformed := 0
	for _, rec := range s.records {
		if rec.Intent == feed.Malformed {
			malformed++
		}
	}
	malformed -= int(lostMalformed)
	if distinct := len(letters) - rep.LetterCopies; distinct != malformed {
		mism = append(mism, fmt.Sprintf("accounting: %d distinct dead letters, %d malformed records", distinct, malformed))
	}
	s.res.Mismatched = len(mism)
	if len(mism) > 20 {
		mism = append(mism[:20], fmt.Sprintf("... and %d more", len(mism)-20))
	}
	s.res.Mismatches = mism
	s.note("consumed %d = admitted %d + late %d + dead-lettered %d (oracle); stored: %d admitted predictions in network rows "+
		"(late %d, dead-lettered %d of %d predictions), %d distinct dead letters (%d redelivered copies); rows %v",
		t.Consumed, t.Admitted, t.Late, t.DeadLettered, rep.AdmittedPredictions, latePred, deadPred, admittedPred+latePred+deadPred,
		len(letters)-rep.LetterCopies, rep.LetterCopies, rep.Rows)
}

// WriteTable prints the results as a table.
func WriteTable(w io.Writer, size string, results []Result) {
	fmt.Fprintf(w, "\nchaos (%s)\n", size)
	fmt.Fprintf(w, "%-18s %9s %5s %8s %5s %4s %7s %10s %7s %10s %15s %8s %9s  %s\n", "scenario", "messages", "kills", "restarts",
		"moves", "lost", "zombies", "rebalances", "outages", "mismatched", "max uncommitted", "peak RSS", "wall", "faults")
	for _, r := range results {
		mm := fmt.Sprint(r.Mismatched)
		if r.Err != nil {
			mm = "ERROR"
		}
		fmt.Fprintf(w, "%-18s %9d %5d %8d %5d %4d %7d %10d %7d %10s %15d %4.0f MiB %9s  %s\n", r.Scenario, r.Messages, r.Kills,
			r.BrokerRestarts, r.Moves, r.Lost, r.Zombies, r.Rebalances, r.Outages, mm, r.MaxUncommitted, float64(r.PeakRSSKB)/1024,
			r.Wall.Round(100*time.Millisecond), faultsColumn(r.Faults))
	}
	for _, r := range results {
		for _, n := range r.Notes {
			fmt.Fprintf(w, "  %s: %s\n", r.Scenario, n)
		}
		for _, m := range r.Mismatches {
			fmt.Fprintf(w, "  %s MISMATCH: %s\n", r.Scenario, m)
		}
		if r.Err != nil {
			fmt.Fprintf(w, "  %s ERROR: %v\n", r.Scenario, r.Err)
		}
	}
}
