package bench

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/dlq/dlqkafka"
	"github.com/streamledger/streamledger/examples/credits/internal/database"
	"github.com/streamledger/streamledger/examples/credits/internal/service"
)

// Config configures a benchmark. Zero fields take the defaults in brackets.
type Config struct {
	Feed FeedConfig
	// DSN reaches the database: a Postgres URL, or mysql://... for MySQL (package
	// internal/database). Every run works in a schema of its own (on MySQL a database),
	// dropped after.
	DSN string
	// Batches are the batch sizes measured, one run each [16, 64, 256, 1024].
	Batches []int
	// Workers is the service's workers: partitions decided and applied at once [Feed.Partitions].
	Workers int
	// CommitInterval is the service's commit interval [100ms].
	CommitInterval time.Duration
	// PacedRate is the rate of the latency run, in credits/s [half the best rate, rounded down
	// to a thousand]; negative skips the latency run.
	PacedRate int
	// PacedFor is how long the latency run produces [10s].
	PacedFor time.Duration
	// Progress receives a line per phase; nil discards them.
	Progress io.Writer
	// Logger receives the services' logs [discarded].
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	c.Feed = c.Feed.withDefaults()
	if len(c.Batches) == 0 {
		c.Batches = []int{16, 64, 256, 1024}
	}
	c.Workers = cmp.Or(c.Workers, c.Feed.Partitions)
	c.CommitInterval = cmp.Or(c.CommitInterval, 100*time.Millisecond)
	c.PacedFor = cmp.Or(c.PacedFor, 10*time.Second)
	c.Progress = cmp.Or(c.Progress, io.Discard)
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	return c
}

// Result is what a benchmark measured.
type Result struct {
	Config   Config
	Expected Expected
	Produce  Rate // the feed handed to the broker
	Raw      Rate // the client alone
	Runs     []RunResult
	Best     int // index in Runs of the fastest batch size
	Replay   RunResult
	Paced    RunResult
	// PacedRate is the rate the paced run was fed at, in credits/s.
	PacedRate int
}

// RunResult is one run of the service through a whole topic.
type RunResult struct {
	Name     string
	Batch    int
	Rate     Rate
	Ratio    float64 // Rate.PerSec over the raw consumer's
	Counters service.Counters
	// Transactions counts the batches applied: one transaction each, retries aside.
	Transactions int64
	Latency      Latency
	Verified     bool
}

// env is what the runs of one benchmark share.
type env struct {
	cfg     Config
	brokers string
	db      *database.DB
	dl      *dlqkafka.Producer
}

const (
	topic      = "credits"
	pacedTopic = "credits-paced"
)

// Run measures the feed through the service at each batch size, then replays it at the best
// one (every credit a duplicate), then measures the produce-to-commit latency at a paced rate.
// Each run's balances and markers are compared with the feed's independent count; a mismatch
// is an error.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg = cfg.withDefaults()
	res := Result{Config: cfg}
	say := func(format string, args ...any) { fmt.Fprintf(cfg.Progress, format+"\n", args...) }
	parts := int32(cfg.Feed.Partitions)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(parts, topic, dlq.DefaultTopic(topic), pacedTopic, dlq.DefaultTopic(pacedTopic)))
	if err != nil {
		return res, fmt.Errorf("bench: in-process broker: %w", err)
	}
	defer cluster.Close()
	e := &env{cfg: cfg, brokers: cluster.ListenAddrs()[0]}
	if e.db, err = database.Open(ctx, cfg.DSN, cfg.Workers+4); err != nil {
		return res, fmt.Errorf("bench: %w", err)
	}
	defer e.db.Close()
	if e.dl, err = dlqkafka.NewProducer(dlqkafka.Config{Kafka: quiet(e.brokers), ConsumerID: "credits-bench"}); err != nil {
		return res, err
	}
	defer e.dl.Close(context.WithoutCancel(ctx))

	if res.Expected, res.Produce, err = e.produce(ctx, topic, cfg.Feed); err != nil {
		return res, err
	}
	say("produced %d credits in %.1fs", res.Expected.Messages, res.Produce.Seconds)
	if res.Raw, err = consumeRaw(ctx, e.brokers, topic, res.Expected.Messages); err != nil {
		return res, err
	}
	say("raw consumer: %.0f credits/s", res.Raw.PerSec)
	if err := e.sweep(ctx, &res, say); err != nil {
		return res, err
	}
	if cfg.PacedRate >= 0 {
		if res.Paced, err = e.paced(ctx, res.Runs[res.Best]); err != nil {
			return res, err
		}
		res.PacedRate = e.cfg.PacedRate
		say("paced at %d credits/s: p99 produce to commit %v", res.PacedRate, res.Paced.Latency.P99)
	}
	return res, nil
}

// sweep runs the feed at each batch size, keeping the schema of the fastest so far, then
// replays the feed into it.
func (e *env) sweep(ctx context.Context, res *Result, say func(string, ...any)) error {
	keep := ""
	defer func() {
		if keep != "" {
			_ = e.drop(context.WithoutCancel(ctx), keep)
		}
	}()
	for i, batch := range e.cfg.Batches {
		schema := freshSchema()
		r, err := e.run(ctx, runSpec{name: fmt.Sprintf("batch %d", batch), schema: schema, group: fmt.Sprintf("bench-%d", batch),
			topic: topic, batch: batch, exp: res.Expected})
		if err != nil {
			_ = e.drop(context.WithoutCancel(ctx), schema)
			return err
		}
		r.Ratio = r.Rate.PerSec / res.Raw.PerSec
		res.Runs = append(res.Runs, r)
		say("batch %d: %.0f credits/s (%.2f of raw), %d transactions", batch, r.Rate.PerSec, r.Ratio, r.Transactions)
		if keep == "" || r.Rate.PerSec > res.Runs[res.Best].Rate.PerSec {
			if keep != "" {
				_ = e.drop(ctx, keep)
			}
			keep, res.Best = schema, i
		} else if err := e.drop(ctx, schema); err != nil {
			return err
		}
	}
	best := res.Runs[res.Best]
	r, err := e.run(ctx, runSpec{name: "replay", schema: keep, group: "bench-replay", topic: topic, batch: best.Batch,
		exp: res.Expected, replay: true})
	if err != nil {
		return err
	}
	r.Ratio = r.Rate.PerSec / res.Raw.PerSec
	res.Replay = r
	say("replay at batch %d: %.0f credits/s, every credit a duplicate or dead-lettered again", best.Batch, r.Rate.PerSec)
	return nil
}

// paced runs the service on a topic fed at PacedRate for PacedFor, and measures the time from
// produce to commit.
func (e *env) paced(ctx context.Context, best RunResult) (RunResult, error) {
	if e.cfg.PacedRate == 0 {
		e.cfg.PacedRate = max(1000, int(best.Rate.PerSec/2)/1000*1000)
	}
	fc := e.cfg.Feed
	fc.Credits, fc.IDPrefix = int(float64(e.cfg.PacedRate)*e.cfg.PacedFor.Seconds()), "p"
	schema := freshSchema()
	defer e.drop(context.WithoutCancel(ctx), schema)
	return e.run(ctx, runSpec{name: "paced", schema: schema, group: "bench-paced", topic: pacedTopic, batch: best.Batch,
		feed: &fc, rate: e.cfg.PacedRate})
}

// drop drops a run's schema.
func (e *env) drop(ctx context.Context, schema string) error {
	return e.db.Drop(ctx, schema)
}

func freshSchema() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "credits_bench_" + hex.EncodeToString(b[:])
}

var errNotDone = errors.New("bench: the service stopped before committing every record")
