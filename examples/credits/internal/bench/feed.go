package bench

import (
	"cmp"
	"fmt"
	"math/rand/v2"

	"github.com/streamledger/streamledger/examples/credits/internal/credit"
)

// FeedConfig describes a benchmark feed. Zero fields take the defaults in brackets.
type FeedConfig struct {
	Credits    int     // messages in all [1,000,000]
	Accounts   int     // accounts opened before the run, each with balance 0 [10,000]
	Partitions int     // partitions of the topic [8]
	Duplicates float64 // share of messages that send an earlier credit again [0.10]
	Unknown    float64 // share of credits to an account that does not exist [0.02]
	Conflicts  float64 // share of messages that reuse an earlier credit's id for another amount [0.01]
	Seed       uint64  // of the random choices [1]
	IDPrefix   string  // of the operation ids ["c"]
}

func (c FeedConfig) withDefaults() FeedConfig {
	c.Credits = cmp.Or(c.Credits, 1_000_000)
	c.Accounts = cmp.Or(c.Accounts, 10_000)
	c.Partitions = cmp.Or(c.Partitions, 8)
	c.Duplicates = cmp.Or(c.Duplicates, 0.10)
	c.Unknown = cmp.Or(c.Unknown, 0.02)
	c.Conflicts = cmp.Or(c.Conflicts, 0.01)
	c.Seed = cmp.Or(c.Seed, 1)
	c.IDPrefix = cmp.Or(c.IDPrefix, "c")
	return c
}

// Account returns the name of account i.
func Account(i int) string { return fmt.Sprintf("a%05d", i) }

// Message is one record of the feed: a credit, and the partition its account's credits go
// to (the account's number modulo the partitions), as a producer that keys by account puts
// them.
type Message struct {
	Partition int32
	Credit    credit.Credit
}

// Expected is the independent count of a feed: what applying its messages one by one, in
// order, must leave in the database. Every id of a partition stays in that partition (a
// duplicate or a conflict reuses a credit of the same account), so the order of the
// partitions relative to each other does not matter.
type Expected struct {
	Messages   int64
	Applied    int64 // new credits to an existing account: one marker and one entry each
	Duplicates int64 // earlier credits sent again
	Conflicts  int64 // earlier ids with another amount: dead-lettered
	Unknown    int64 // credits to an account that does not exist: dead-lettered
	// Balances holds each account's final balance, by account index.
	Balances []int64
	// Markers holds the ids of the applied credits: the markers the run must leave.
	Markers map[string]bool
	// Ends holds each partition's end offset (its message count).
	Ends []int64
}

// Feed generates the messages of a feed, in order, and counts what they must do.
type Feed struct {
	cfg    FeedConfig
	r      *rand.Rand
	n      int
	recent []applied // the last applied credits, for duplicates and conflicts
	exp    Expected
}

// NewFeed returns the generator of cfg's feed.
func NewFeed(cfg FeedConfig) *Feed {
	cfg = cfg.withDefaults()
	f := &Feed{cfg: cfg, r: rand.New(rand.NewPCG(cfg.Seed, 18))}
	f.exp.Balances = make([]int64, cfg.Accounts)
	f.exp.Markers = make(map[string]bool, cfg.Credits)
	f.exp.Ends = make([]int64, cfg.Partitions)
	return f
}

// Config returns the feed's configuration with its defaults.
func (f *Feed) Config() FeedConfig { return f.cfg }

// Next returns the next message; ok is false after the last one.
func (f *Feed) Next() (m Message, ok bool) {
	if f.n >= f.cfg.Credits {
		return Message{}, false
	}
	f.n++
	x := f.r.Float64()
	var (
		c    applied
		kind = &f.exp.Applied
	)
	switch {
	case len(f.recent) > 0 && x < f.cfg.Duplicates:
		c, kind = f.recent[f.r.IntN(len(f.recent))], &f.exp.Duplicates
	case len(f.recent) > 0 && x < f.cfg.Duplicates+f.cfg.Conflicts:
		c, kind = f.recent[f.r.IntN(len(f.recent))], &f.exp.Conflicts
		c.Amount++
	case x < f.cfg.Duplicates+f.cfg.Conflicts+f.cfg.Unknown:
		c.index, kind = f.r.IntN(f.cfg.Accounts), &f.exp.Unknown
		c.Credit = credit.Credit{ID: fmt.Sprintf("%s%07d", f.cfg.IDPrefix, f.n), Account: fmt.Sprintf("x%05d", c.index), Amount: 1}
	default:
		c.index = f.r.IntN(f.cfg.Accounts)
		c.Credit = credit.Credit{ID: fmt.Sprintf("%s%07d", f.cfg.IDPrefix, f.n), Account: Account(c.index), Amount: 1 + f.r.Int64N(100)}
		f.exp.Balances[c.index] += c.Amount
		f.exp.Markers[c.ID] = true
		f.remember(c)
	}
	*kind++
	m = Message{Partition: int32(c.index % f.cfg.Partitions), Credit: c.Credit}
	f.exp.Ends[m.Partition]++
	f.exp.Messages++
	return m, true
}

// applied is a credit with the index of its account.
type applied struct {
	credit.Credit
	index int
}

// remember keeps c among the last applied credits.
func (f *Feed) remember(c applied) {
	const keep = 4096
	if len(f.recent) < keep {
		f.recent = append(f.recent, c)
		return
	}
	f.recent[f.r.IntN(keep)] = c
}

// Expected returns the count of the messages generated so far.
func (f *Feed) Expected() Expected { return f.exp }
