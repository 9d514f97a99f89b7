package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/streamledger/streamledger/examples/credits/internal/accounts"
	"github.com/streamledger/streamledger/examples/credits/internal/service"
)

// runSpec is one run of the service.
type runSpec struct {
	name, schema, group, topic string
	batch                      int
	exp                        Expected // what the topic holds, when it is produced before the run
	replay                     bool     // the schema holds the run of the same topic already
	feed                       *FeedConfig
	rate                       int // of feed, produced while the service runs
}

// run runs the service through rs's topic until every partition is committed through its end,
// then compares the database with the independent count.
func (e *env) run(ctx context.Context, rs runSpec) (RunResult, error) {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var pr *producer
	if rs.feed != nil {
		var err error
		if pr, err = newProducer(e.brokers, rs.topic, e.cfg.Feed.Partitions); err != nil {
			return RunResult{}, err
		}
	}
	m := newMeter(e.cfg.Feed.Partitions, cancel, pr)
	svc, err := e.service(rs, m.hooks())
	if err != nil {
		return RunResult{}, err
	}
	if !rs.replay {
		if err := e.prepare(ctx, svc, rs.schema); err != nil {
			return RunResult{}, err
		}
	}
	done := make(chan error, 1)
	go func() { done <- svc.Run(runCtx) }()
	if rs.feed != nil {
		exp, err := e.producePaced(runCtx, pr, *rs.feed, rs.rate)
		if err != nil {
			cancel()
			<-done
			return RunResult{}, err
		}
		rs.exp = exp
	}
	m.setEnds(rs.exp.Ends)
	if err := <-done; err != nil {
		return RunResult{}, fmt.Errorf("bench: %s: %w", rs.name, err)
	}
	span, ok := m.span()
	if !ok {
		return RunResult{}, fmt.Errorf("%w (%s)", errNotDone, rs.name)
	}
	r := RunResult{Name: rs.name, Batch: rs.batch, Counters: svc.Counters(), Transactions: m.batches.Load(), Latency: m.latency(),
		Rate: Rate{Records: rs.exp.Messages, Seconds: span.Seconds(), PerSec: float64(rs.exp.Messages) / span.Seconds()}}
	if err := e.verify(ctx, rs, r.Counters); err != nil {
		return r, fmt.Errorf("bench: %s: %w", rs.name, err)
	}
	r.Verified = true
	return r, nil
}

// service returns the credits service of rs.
func (e *env) service(rs runSpec, hooks service.Hooks) (*service.Service, error) {
	km := quiet(e.brokers)
	km["group.id"] = rs.group
	cfg := service.Config{
		Kafka:          km,
		Topic:          rs.topic,
		DeadLetters:    e.dl,
		Batch:          rs.batch,
		Workers:        e.cfg.Workers,
		CommitInterval: e.cfg.CommitInterval,
		PruneInterval:  -1,
		Logger:         e.cfg.Logger,
		Hooks:          hooks,
	}
	if err := e.db.Configure(context.Background(), &cfg, rs.schema); err != nil {
		return nil, err
	}
	return service.New(cfg)
}

// prepare creates the run's tables and opens every account with balance 0.
func (e *env) prepare(ctx context.Context, svc *service.Service, schema string) error {
	if err := svc.Migrate(ctx); err != nil {
		return err
	}
	return e.db.OpenAccounts(ctx, schema, e.cfg.Feed.Accounts, Account)
}

// produce writes the whole feed of fc to topic and returns its count.
func (e *env) produce(ctx context.Context, topic string, fc FeedConfig) (Expected, Rate, error) {
	pr, err := newProducer(e.brokers, topic, fc.Partitions)
	if err != nil {
		return Expected{}, Rate{}, err
	}
	start := time.Now()
	f := NewFeed(fc)
	for {
		m, ok := f.Next()
		if !ok {
			break
		}
		if err := pr.send(ctx, m); err != nil {
			_ = pr.close(ctx)
			return Expected{}, Rate{}, fmt.Errorf("bench: producing: %w", err)
		}
	}
	if err := pr.close(ctx); err != nil {
		return Expected{}, Rate{}, err
	}
	exp := f.Expected()
	d := time.Since(start).Seconds()
	return exp, Rate{Records: exp.Messages, Seconds: d, PerSec: float64(exp.Messages) / d}, nil
}

// producePaced writes the feed of fc at rate credits/s, in a burst every 10 ms, while the
// service runs, and returns its count.
func (e *env) producePaced(ctx context.Context, pr *producer, fc FeedConfig, rate int) (Expected, error) {
	f := NewFeed(fc)
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	start := time.Now()
	sent := 0
	for more := true; more; {
		select {
		case <-ctx.Done():
			return Expected{}, ctx.Err()
		case <-t.C:
		}
		due := int(time.Since(start).Seconds() * float64(rate))
		for ; sent < due; sent++ {
			m, ok := f.Next()
			if !ok {
				more = false
				break
			}
			if err := pr.send(ctx, m); err != nil {
				return Expected{}, err
			}
		}
	}
	if err := pr.close(ctx); err != nil {
		return Expected{}, err
	}
	return f.Expected(), nil
}

// verify compares the run's database with the independent count: every account's balance,
// the set of markers, one entry per marker, and the service's counters.
func (e *env) verify(ctx context.Context, rs runSpec, c service.Counters) error {
	exp := rs.exp
	want := service.Counters{Applied: exp.Applied, Duplicate: exp.Duplicates, DeadLettered: exp.Conflicts + exp.Unknown, Commits: c.Commits}
	if rs.replay {
		want.Applied, want.Duplicate = 0, exp.Applied+exp.Duplicates
	}
	if c != want {
		return fmt.Errorf("counters %+v, the feed's count %+v", c, want)
	}
	st, err := e.db.Store(ctx, rs.schema)
	if err != nil {
		return err
	}
	bals, err := st.Balances(ctx)
	if err != nil {
		return err
	}
	if len(bals) != len(exp.Balances) {
		return fmt.Errorf("%d accounts, expected %d", len(bals), len(exp.Balances))
	}
	for i, b := range exp.Balances {
		if got := bals[Account(i)]; got != b {
			return fmt.Errorf("account %s: balance %d, the feed's count %d", Account(i), got, b)
		}
	}
	return verifyMarkers(ctx, st, exp)
}

// verifyMarkers compares the markers and entries with the applied credits of the count.
func verifyMarkers(ctx context.Context, st accounts.Store, exp Expected) error {
	markers, err := st.Markers(ctx)
	if err != nil {
		return err
	}
	if len(markers) != len(exp.Markers) {
		return fmt.Errorf("%d markers, the feed's count %d", len(markers), len(exp.Markers))
	}
	for id := range markers {
		if !exp.Markers[id] {
			return fmt.Errorf("marker %s of a credit the count did not apply", id)
		}
	}
	entries, err := st.Entries(ctx)
	if err != nil {
		return err
	}
	var n int64
	for _, es := range entries {
		n += int64(len(es))
	}
	if n != exp.Applied || int64(len(entries)) != exp.Applied {
		return fmt.Errorf("%d entries of %d ids, the feed's count %d", n, len(entries), exp.Applied)
	}
	return nil
}
