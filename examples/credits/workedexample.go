package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/streamledger/streamledger/dlq/dlqkafka"
	"github.com/streamledger/streamledger/examples/credits/internal/accounts"
	"github.com/streamledger/streamledger/examples/credits/internal/credit"
	"github.com/streamledger/streamledger/examples/credits/internal/database"
	"github.com/streamledger/streamledger/examples/credits/internal/service"
	"github.com/streamledger/streamledger/ledger"
)

// boundary is the guarantee, as the seed's interview answer names it.
const boundary = "Within this database transaction and while operation identities are retained, repeated delivery produces one credit. " +
	"The broker can still redeliver, and external calls require their own contract."

type exampleOptions struct {
	brokers, database, schema string
	keep                      bool
	logger                    *slog.Logger
}

func workedExampleCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("worked-example", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o exampleOptions
	fs.StringVar(&o.brokers, "brokers", "", "Kafka bootstrap servers; empty runs an in-process broker")
	fs.StringVar(&o.database, "database", databaseURL(), "Postgres URL, or mysql://user:password@host:port/database for MySQL; DATABASE_URL sets the default")
	fs.StringVar(&o.schema, "schema", "", "schema for the example's tables; empty: a fresh one, dropped at the end")
	fs.BoolVar(&o.keep, "keep", false, "keep the schema at the end, to look at the tables")
	verbose := fs.Bool("v", false, "log what the consumers do to stderr")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	o.logger = slog.New(slog.DiscardHandler)
	if *verbose {
		o.logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return workedExample(ctx, stdout, o)
}

// workedExample walks the seed's worked example, printing each step to w: balance 100, credit
// e42 of 10 committed with its marker, a crash before the offset commit, the redelivery found
// duplicate, balance 110.
func workedExample(ctx context.Context, w io.Writer, o exampleOptions) (err error) {
	ctx, cancel := context.WithTimeout(ctx, 2*waitTimeout)
	defer cancel()

	b, err := openBroker(o.brokers)
	if err != nil {
		return err
	}
	defer b.close()
	topic, group := "credits", "credits"
	if b.local == nil {
		// A shared cluster: names of this run's own.
		topic = freshSchema("credits-example")
		group = topic
	}
	if err := b.createTopic(ctx, topic, 1); err != nil {
		return err
	}
	db, err := database.Open(ctx, o.database, 0)
	if err != nil {
		return err
	}
	defer db.Close()
	schema := o.schema
	if schema == "" {
		schema = freshSchema("credits_example")
		if !o.keep {
			defer func() { err = errors.Join(err, db.Drop(context.WithoutCancel(ctx), schema)) }()
		}
	}
	dl, err := dlqkafka.NewProducer(dlqkafka.Config{Kafka: b.config(nil), ConsumerID: "credits-worked-example", CreateTopics: true})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, dl.Close(context.WithoutCancel(ctx))) }()

	x := &walkthrough{w: w, b: b, topic: topic, group: group, db: db, schema: schema, dl: dl, logger: o.logger,
		decided: make(chan service.Decision, 16), committed: make(chan []ledger.Commit, 16)}
	x.say("The seed's worked example: credit e42 of 10 to account a7, and a crash before the offset commit.")
	x.say("  broker:   %s, topic %s, group %s", b, topic, group)
	x.say("  database: %s, schema %s", redact(o.database), schema)
	return x.walk(ctx)
}

// walkthrough is the worked example's broker, database and consumers, and where it prints.
type walkthrough struct {
	w            io.Writer
	b            *broker
	topic, group string
	db           *database.DB
	schema       string
	dl           *dlqkafka.Producer
	logger       *slog.Logger
	st           accounts.Store
	// decisions and commits of the running consumer reach the example through channels.
	decided   chan service.Decision
	committed chan []ledger.Commit
}

func (x *walkthrough) say(format string, args ...any) { fmt.Fprintf(x.w, format+"\n", args...) }

// walk prints the example's six steps, each after it happened.
func (x *walkthrough) walk(ctx context.Context) error {
	first, err := x.newConsumer(true)
	if err != nil {
		return err
	}
	if err := first.Migrate(ctx); err != nil {
		return err
	}
	x.st = first.Store()
	if err := x.openAccount(ctx); err != nil {
		return err
	}
	if err := x.crash(ctx, first); err != nil {
		return err
	}
	if err := x.redeliver(ctx); err != nil {
		return err
	}
	x.say("")
	x.say("The balance stays 110: both writes share one transaction, and the marker is still retained.")
	x.say(boundary)
	return nil
}

// openAccount opens account a7 with balance 100 and produces the credit e42 (steps 1 and 2).
func (x *walkthrough) openAccount(ctx context.Context) error {
	if _, err := x.st.Open(ctx, "a7", 100); err != nil {
		return err
	}
	s, err := x.state(ctx)
	if err != nil {
		return err
	}
	x.say("")
	x.say("1. Account a7 opens with balance 100; no marker for e42 yet.")
	x.say("   %s", s)

	e42 := credit.Credit{ID: "e42", Account: "a7", Amount: 10}
	offs, err := x.b.produce(ctx, x.topic, record{key: e42.Account, value: e42.Payload()})
	if err != nil {
		return err
	}
	x.say("2. The credit %s is produced to partition 0 at offset %d.", e42.Payload(), offs[0])
	return nil
}

// crash runs consumer 1, which applies e42 and dies after the sink commit, before the offset
// commit (steps 3 and 4).
func (x *walkthrough) crash(ctx context.Context, first *service.Service) error {
	stopFirst := x.run(ctx, first)
	d, err := x.wait(ctx, "consumer 1")
	if err != nil {
		return err
	}
	s, err := x.state(ctx)
	if err != nil {
		return err
	}
	x.say("3. Consumer 1 (group %s) receives offset %d and applies e42: one transaction inserts the marker", x.group, d.Offset)
	x.say("   and adds 10 to the balance, and commits both. Outcome: %s.", d.Outcome)
	x.say("   %s", s)
	if err := stopFirst(); !errors.Is(err, service.ErrAborted) {
		return fmt.Errorf("consumer 1 was to crash, it returned %v", err)
	}
	o1, err := x.offset(ctx)
	if err != nil {
		return err
	}
	x.say("4. Consumer 1 crashes after the sink commit, before the offset commit.")
	x.say("   committed offset of group %s on partition 0: %s", x.group, o1)
	return nil
}

// redeliver runs consumer 2, which receives e42 again, finds it duplicate and commits past it
// (steps 5 and 6).
func (x *walkthrough) redeliver(ctx context.Context) error {
	second, err := x.newConsumer(false)
	if err != nil {
		return err
	}
	stopSecond := x.run(ctx, second)
	d, err := x.wait(ctx, "consumer 2")
	if err != nil {
		return err
	}
	x.say("5. Consumer 2 starts in the same group; the broker redelivers offset %d.", d.Offset)
	x.say("   The marker insert finds e42 already present: outcome %s, the credit is not repeated.", d.Outcome)
	for done := false; !done; {
		select {
		case cs := <-x.committed:
			for _, c := range cs {
				done = done || c.Offset > d.Offset
			}
		case <-ctx.Done():
			return fmt.Errorf("waiting for consumer 2's commit: %w", ctx.Err())
		}
	}
	if err := stopSecond(); err != nil {
		return fmt.Errorf("consumer 2: %w", err)
	}
	s, err := x.state(ctx)
	if err != nil {
		return err
	}
	o2, err := x.offset(ctx)
	if err != nil {
		return err
	}
	x.say("6. Consumer 2 commits the offset and stops.")
	x.say("   %s; committed offset: %s", s, o2)
	return nil
}

// newConsumer returns a consumer of the example's group that reports its decisions and
// commits; with crash it aborts, as a process dying would, right after its first decision.
func (x *walkthrough) newConsumer(crash bool) (*service.Service, error) {
	var svc *service.Service
	hooks := service.Hooks{
		Decided: func(d service.Decision) {
			x.decided <- d
			if crash {
				// The process dies here: the sink transaction is committed, the offset is not.
				svc.Abort()
			}
		},
		Committed: func(cs []ledger.Commit) { x.committed <- cs },
	}
	cfg := service.Config{
		Kafka:          x.b.config(kafka.ConfigMap{"group.id": x.group, "session.timeout.ms": 6000, "heartbeat.interval.ms": 100}),
		Topic:          x.topic,
		DeadLetters:    x.dl,
		CommitInterval: service.EveryMessage,
		PruneInterval:  -1,
		Logger:         x.logger,
		Hooks:          hooks,
	}
	if err := x.db.Configure(context.Background(), &cfg, x.schema); err != nil {
		return nil, err
	}
	svc, err := service.New(cfg)
	return svc, err
}

// run starts svc and returns what stops it and returns its error.
func (x *walkthrough) run(ctx context.Context, svc *service.Service) (stop func() error) {
	runCtx, cancelRun := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- svc.Run(runCtx) }()
	return func() error {
		cancelRun()
		return <-done
	}
}

// wait returns the next decision of the running consumer, named what in an error.
func (x *walkthrough) wait(ctx context.Context, what string) (service.Decision, error) {
	select {
	case d := <-x.decided:
		return d, nil
	case <-ctx.Done():
		return service.Decision{}, fmt.Errorf("waiting for %s: %w", what, ctx.Err())
	}
}

// state describes a7's balance and e42's marker and entries.
func (x *walkthrough) state(ctx context.Context) (string, error) {
	bal, _, err := x.st.Balance(ctx, "a7")
	if err != nil {
		return "", err
	}
	markers, err := x.st.Markers(ctx)
	if err != nil {
		return "", err
	}
	entries, err := x.st.Entries(ctx)
	if err != nil {
		return "", err
	}
	marker := "absent"
	if _, ok := markers["e42"]; ok {
		marker = "present"
	}
	return fmt.Sprintf("balance a7 = %d, marker e42 %s, entries of e42: %d", bal, marker, len(entries["e42"])), nil
}

// offset is the group's committed offset on partition 0, or "none".
func (x *walkthrough) offset(ctx context.Context) (string, error) {
	off, ok, err := x.b.committed(ctx, x.group, x.topic, 0)
	switch {
	case err != nil:
		return "", err
	case !ok:
		return "none", nil
	}
	return fmt.Sprint(off), nil
}
