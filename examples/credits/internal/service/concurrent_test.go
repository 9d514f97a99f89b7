package service_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/examples/credits/internal/credit"
	"github.com/streamledger/streamledger/examples/credits/internal/service"
	"github.com/streamledger/streamledger/internal/faults"
	"github.com/streamledger/streamledger/internal/kafkatest"
)

// Two consumers in two groups are delivered the same credits and race on them, in batches:
// each credit is applied exactly once, by one of them, and found duplicate by the other. For
// the first credit the race is forced: the consumer that inserts its marker first holds it,
// uncommitted, until the other is blocked on it in the database, so neither saw a committed
// marker — the case a read-before-write check gets wrong and the marker's primary key
// arbitrates.
func TestConcurrentDuplicateDelivery(t *testing.T) {
	for _, db := range databases {
		t.Run(db, func(t *testing.T) { concurrentDuplicateDelivery(t, db) })
	}
}

func concurrentDuplicateDelivery(t *testing.T, db string) {
	e := newEnvOn(t, db, 2)
	opening := map[string]int64{}
	for i := range 6 {
		opening[fmt.Sprintf("a%d", i)] = 1000
	}
	e.open(opening)
	ops := map[string]expect{}
	var p0, p1 []credit.Credit
	for i := range 60 {
		c := credit.Credit{ID: fmt.Sprintf("c%02d", i), Account: fmt.Sprintf("a%d", i%6), Amount: int64(i + 1)}
		ops[c.ID] = expect{applied: true, account: c.Account, amount: c.Amount}
		if i%2 == 0 {
			p0 = append(p0, c)
		} else {
			p1 = append(p1, c)
		}
	}
	e.produce(0, p0...)
	e.produce(1, p1...)

	// Whichever consumer inserts c00's marker first holds it, uncommitted, until the other is
	// blocked on it in the database.
	var (
		held    atomic.Bool
		blocked = make(chan string, 1)
	)
	force := func(name string, cfg *service.Config) {
		// One worker: this consumer's batches run one after another, so the batch that arms
		// is the one whose transaction the sink hook sees next.
		cfg.Workers = 1
		var armed atomic.Bool
		cfg.Hooks.BeforeApply = func(ds []service.Delivery) {
			armed.Store(slices.ContainsFunc(ds, func(d service.Delivery) bool { return d.Credit.ID == "c00" }))
		}
		cfg.SinkFaults = func(ctx context.Context, p faults.Point, a faults.Attempt) error {
			if !armed.Load() || p != faults.AfterMarker || !held.CompareAndSwap(false, true) {
				return nil
			}
			deadline := time.Now().Add(kafkatest.Timeout)
			for time.Now().Before(deadline) {
				n, err := e.db.blockedOn(ctx, a.Conn)
				if err != nil {
					return err
				}
				if n > 0 {
					blocked <- fmt.Sprintf("%s held c00's marker; %d backend(s) blocked on it", name, n)
					return nil
				}
				time.Sleep(5 * time.Millisecond)
			}
			return fmt.Errorf("no backend blocked on %s's marker within %v", name, kafkatest.Timeout)
		}
	}
	cfgA, cfgB := e.config("ga"), e.config("gb")
	force("A", &cfgA)
	force("B", &cfgB)
	a := e.start("A", cfgA)
	b := e.start("B", cfgB)
	e.waitCommitted("ga", 30, 30)
	e.waitCommitted("gb", 30, 30)
	require.NoError(t, a.stop(t))
	require.NoError(t, b.stop(t))
	var race string
	select {
	case race = <-blocked:
		t.Log(race)
	default:
		t.Fatal("the forced race did not happen")
	}
	holder := race[:1]
	assert.Contains(t, race, "1 backend(s) blocked")

	byOp := map[string][]string{}
	for name, in := range map[string]*instance{"A": a, "B": b} {
		for _, d := range in.decisions {
			byOp[d.Credit.ID] = append(byOp[d.Credit.ID], name+":"+d.Outcome.String())
		}
	}
	for id := range ops {
		got := byOp[id]
		require.Len(t, got, 2, "%s delivered once to each group: %v", id, got)
		applied := 0
		for _, o := range got {
			if o == "A:applied" || o == "B:applied" {
				applied++
			}
		}
		assert.Equal(t, 1, applied, "%s applied by exactly one consumer, the other found a duplicate: %v", id, got)
	}
	other := map[string]string{"A": "B", "B": "A"}[holder]
	assert.ElementsMatch(t, []string{holder + ":applied", other + ":duplicate"}, byOp["c00"],
		"the forced race: the holder applies, the other waits for its marker and finds a duplicate")
	ca, cb := a.svc.Counters(), b.svc.Counters()
	assert.Equal(t, int64(60), ca.Applied+cb.Applied)
	assert.Equal(t, int64(60), ca.Duplicate+cb.Duplicate)
	e.verify("after both groups", opening, ops)
}

// The race of two groups at scale: 10,000 credits (2,000 with -short) over four partitions and
// 100 accounts, each account's credits on one partition as a producer keying by account puts
// them, consumed by two groups at once in batches on several workers: every credit is applied
// exactly once, by one group, and found duplicate by the other.
func TestConcurrentDuplicateDeliveryInBatches(t *testing.T) {
	n := 10_000
	if testing.Short() {
		n = 2_000
	}
	e := newEnv(t, 4)
	opening := map[string]int64{}
	for i := range 100 {
		opening[fmt.Sprintf("a%02d", i)] = 0
	}
	e.open(opening)
	ops := map[string]expect{}
	parts := make([][]credit.Credit, 4)
	for i := range n {
		acct := i % 100
		c := credit.Credit{ID: fmt.Sprintf("c%05d", i), Account: fmt.Sprintf("a%02d", acct), Amount: int64(1 + i%7)}
		ops[c.ID] = expect{applied: true, account: c.Account, amount: c.Amount}
		parts[acct%4] = append(parts[acct%4], c)
	}
	for p, cs := range parts {
		e.produce(int32(p), cs...)
	}
	want := make([]int64, 4)
	for p, cs := range parts {
		want[p] = int64(len(cs))
	}
	cfg := func(group string) service.Config {
		c := e.config(group)
		c.CommitInterval = 50 * time.Millisecond
		c.Workers = 4
		return c
	}
	a := e.start("A", cfg("ga"))
	b := e.start("B", cfg("gb"))
	e.waitCommitted("ga", want...)
	e.waitCommitted("gb", want...)
	require.NoError(t, a.stop(t))
	require.NoError(t, b.stop(t))

	applied := map[string]int{}
	decided := map[string]int{}
	for _, in := range []*instance{a, b} {
		for _, d := range in.decisions {
			decided[d.Credit.ID]++
			if d.Outcome == service.Applied {
				applied[d.Credit.ID]++
			}
		}
	}
	for id := range ops {
		if decided[id] != 2 || applied[id] != 1 {
			t.Errorf("%s: decided %d times, applied %d times; want 2 and 1", id, decided[id], applied[id])
		}
	}
	ca, cb := a.svc.Counters(), b.svc.Counters()
	assert.Equal(t, int64(n), ca.Applied+cb.Applied)
	assert.Equal(t, int64(n), ca.Duplicate+cb.Duplicate)
	e.verify("after both groups", opening, ops)
}
