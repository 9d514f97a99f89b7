package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/dlq/dlqkafka"
	"github.com/streamledger/streamledger/examples/credits/internal/database"
	"github.com/streamledger/streamledger/examples/credits/internal/service"
	"github.com/streamledger/streamledger/ledger"
)

type runOptions struct {
	brokers, database, schema, topic, group string
	horizon, retention, commitEvery         time.Duration
	batch, workers                          int
	accounts                                []account // opened before consuming
	logger                                  *slog.Logger
}

func runCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o runOptions
	fs.StringVar(&o.brokers, "brokers", "", "Kafka bootstrap servers; empty runs a demonstration feed on an in-process broker")
	fs.StringVar(&o.database, "database", databaseURL(), "Postgres URL, or mysql://user:password@host:port/database for MySQL; DATABASE_URL sets the default")
	fs.StringVar(&o.schema, "schema", "", "schema of the tables, on MySQL a database of the server [credits; the demonstration: a fresh one, dropped at the end]")
	fs.StringVar(&o.topic, "topic", service.DefaultTopic, "topic of the credits; dead letters go to dlq.<topic>")
	fs.StringVar(&o.group, "group", "credits", "consumer group")
	fs.DurationVar(&o.horizon, "horizon", 30*24*time.Hour, "how long markers are kept; negative keeps them forever, 0 means 7 days")
	fs.DurationVar(&o.retention, "source-retention", 0, "how far back the topic can redeliver; 0 reads its retention.ms from the broker")
	fs.DurationVar(&o.commitEvery, "commit-interval", service.DefaultCommitInterval, "how often the durable prefix is committed")
	fs.IntVar(&o.batch, "batch", service.DefaultBatch, "most credits of a partition applied in one transaction; -1: one at a time")
	fs.IntVar(&o.workers, "workers", 0, "partitions applied at once, each on its own connection [GOMAXPROCS]")
	open := fs.String("open", "", "accounts to open before consuming, as id=balance,id=balance (existing ones are left alone)")
	verbose := fs.Bool("v", false, "debug logs")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	accounts, err := parseAccounts(*open)
	if err != nil {
		return err
	}
	o.accounts = accounts
	level := slog.LevelInfo
	switch {
	case *verbose:
		level = slog.LevelDebug
	case o.brokers == "":
		level = slog.LevelWarn // the demonstration prints its own account of what happens
	}
	o.logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if o.brokers == "" {
		return demo(ctx, stdout, o)
	}
	if o.schema == "" {
		o.schema = "credits"
	}
	return serve(ctx, o, nil)
}

// serve runs the consumer until ctx is done. When ready is not nil, it is called once the
// tables exist, before consuming (the demonstration opens accounts and produces there).
func serve(ctx context.Context, o runOptions, hooks *service.Hooks, ready ...func(context.Context, *service.Service) error) (err error) {
	b, err := openBroker(o.brokers)
	if err != nil {
		return err
	}
	defer b.close()
	db, err := database.Open(ctx, o.database, 0)
	if err != nil {
		return err
	}
	defer db.Close()
	return serveOn(ctx, b, db, o, hooks, ready...)
}

// serveOn is serve on a broker and a database the caller opened.
func serveOn(ctx context.Context, b *broker, db *database.DB, o runOptions, hooks *service.Hooks, ready ...func(context.Context, *service.Service) error) (err error) {
	retention := o.retention
	if retention == 0 {
		tctx, cancel := context.WithTimeout(ctx, waitTimeout)
		retention, err = service.TopicRetention(tctx, b.config(nil), o.topic)
		cancel()
		if err != nil {
			return err
		}
	}
	dl, err := dlqkafka.NewProducer(dlqkafka.Config{Kafka: b.config(nil), ConsumerID: processorID(), CreateTopics: true})
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), waitTimeout)
		defer cancel()
		err = errors.Join(err, dl.Close(cctx))
	}()
	cfg := service.Config{
		Kafka:           b.config(kafka.ConfigMap{"group.id": o.group}),
		Topic:           o.topic,
		Horizon:         o.horizon,
		SourceRetention: retention,
		DeadLetters:     dl,
		CommitInterval:  o.commitEvery,
		Batch:           o.batch,
		Workers:         o.workers,
		Logger:          o.logger,
	}
	if hooks != nil {
		cfg.Hooks = *hooks
	}
	if err := db.Configure(ctx, &cfg, o.schema); err != nil {
		return err
	}
	svc, err := service.New(cfg)
	if err != nil {
		return err
	}
	if err := svc.Migrate(ctx); err != nil {
		return err
	}
	for _, a := range o.accounts {
		created, err := svc.Store().Open(ctx, a.id, a.balance)
		if err != nil {
			return err
		}
		if created {
			o.logger.Info("account opened", "account", a.id, "balance", a.balance)
		}
	}
	for _, f := range ready {
		if err := f(ctx, svc); err != nil {
			return err
		}
	}
	o.logger.Info("marker retention", "horizon", o.horizon, "source_retention", retention)
	return svc.Run(ctx)
}

type account struct {
	id      string
	balance int64
}

// parseAccounts reads "a1=100,a2=50".
func parseAccounts(s string) ([]account, error) {
	var out []account
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		id, bal, ok := strings.Cut(part, "=")
		n, err := strconv.ParseInt(bal, 10, 64)
		if !ok || id == "" || err != nil {
			return nil, fmt.Errorf("-open: id=balance expected, found %q", part)
		}
		out = append(out, account{id: id, balance: n})
	}
	return out, nil
}

func processorID() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("credits@%s/%d", host, os.Getpid())
}

// demoFeed is the demonstration's topic content: every outcome once.
var demoFeed = []struct{ value, note string }{
	{`{"op_id":"d1","account":"a1","amount":25}`, "a credit"},
	{`{"op_id":"d2","account":"a2","amount":5}`, "a credit"},
	{`{"op_id":"d1","account":"a1","amount":25}`, "d1 delivered again"},
	{`{"amount":25,"account":"a1","op_id":"d1"}`, "d1 again, re-serialized by its producer"},
	{`{"op_id":"d1","account":"a1","amount":30}`, "another credit reusing the id d1"},
	{`{"op_id":"d3","account":"ghost","amount":10}`, "an unknown account"},
	{`{"op_id":"d4","account":"a2","amount":0}`, "a zero amount"},
	{`{"op_id":"d5","account":"a2",`, "malformed JSON"},
	{`{"op_id":"d6","account":"a2","amount":7}`, "a credit"},
}

// demo runs the consumer on an in-process broker fed with demoFeed, prints each decision, and
// stops once every message is committed.
func demo(ctx context.Context, w io.Writer, o runOptions) (err error) {
	ctx, cancel := context.WithTimeout(ctx, 2*waitTimeout)
	defer cancel()
	b, err := openBroker("")
	if err != nil {
		return err
	}
	defer b.close()
	if err := b.createTopic(ctx, o.topic, 1); err != nil {
		return err
	}
	if len(o.accounts) == 0 {
		o.accounts = []account{{"a1", 100}, {"a2", 100}}
	}
	db, err := database.Open(ctx, o.database, 0)
	if err != nil {
		return err
	}
	defer db.Close()
	if o.schema == "" {
		o.schema = freshSchema("credits_demo")
		defer func() { err = errors.Join(err, db.Drop(context.WithoutCancel(ctx), o.schema)) }()
	}
	fmt.Fprintf(w, "broker %s, topic %s; database %s, schema %s\n", b, o.topic, redact(o.database), o.schema)

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	last := int64(len(demoFeed)) - 1
	hooks := &service.Hooks{
		Decided: func(d service.Decision) {
			line := fmt.Sprintf("  @%d %-44s %-40s %s", d.Offset, demoFeed[d.Offset].value, demoFeed[d.Offset].note, d.Outcome)
			if d.Class != "" {
				line += " (" + d.Class + ")"
			}
			fmt.Fprintln(w, line)
		},
		Committed: func(cs []ledger.Commit) {
			if slices.ContainsFunc(cs, func(c ledger.Commit) bool { return c.Offset > last }) {
				stop()
			}
		},
	}
	var svc *service.Service
	produce := func(ctx context.Context, s *service.Service) error {
		svc = s
		recs := make([]record, len(demoFeed))
		for i, m := range demoFeed {
			recs[i] = record{value: []byte(m.value)}
		}
		_, err := b.produce(ctx, o.topic, recs...)
		return err
	}
	if err := serveOn(runCtx, b, db, o, hooks, produce); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("demonstration did not finish: %w", ctx.Err())
	}
	bals, err := svc.Store().Balances(ctx)
	if err != nil {
		return err
	}
	markers, err := svc.Store().Markers(ctx)
	if err != nil {
		return err
	}
	c := svc.Counters()
	fmt.Fprintf(w, "applied %d, duplicates %d, dead-lettered %d (to %s)\n", c.Applied, c.Duplicate, c.DeadLettered, dlq.DefaultTopic(o.topic))
	fmt.Fprintf(w, "balances: a1 = %d, a2 = %d; markers: %v\n", bals["a1"], bals["a2"], slices.Sorted(maps.Keys(markers)))
	return nil
}
