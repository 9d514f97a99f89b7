package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/streamledger/streamledger/sink"
)

// Strategy is how a batch of rows reaches an upsert.
type Strategy int

const (
	// StrategyDefault is the strategy chosen by measurement (see the package documentation):
	// currently [StrategyUnnest].
	StrategyDefault Strategy = iota
	// StrategyUnnest sends INSERT ... SELECT FROM unnest($1::type[], ...) ON CONFLICT
	// statements with one array parameter per column, of at most 8,192 rows each.
	StrategyUnnest
	// StrategyCopy copies the rows into a temporary table (dropped at commit) and upserts
	// them with one INSERT ... SELECT ... ON CONFLICT.
	StrategyCopy
	// StrategyBatch queues one INSERT ... VALUES ... ON CONFLICT per row in a pgx.Batch,
	// sent as one pipeline.
	StrategyBatch
	// StrategyRowByRow executes one INSERT per row and waits for each: the naive baseline
	// of the benchmarks, never a good choice.
	StrategyRowByRow
)

func (s Strategy) String() string {
	switch s {
	case StrategyDefault:
		return "default"
	case StrategyUnnest:
		return "unnest"
	case StrategyCopy:
		return "copy"
	case StrategyBatch:
		return "batch"
	case StrategyRowByRow:
		return "row-by-row"
	default:
		return fmt.Sprintf("Strategy(%d)", int(s))
	}
}

// Config configures a [Sink]. Zero fields take the defaults in brackets.
type Config struct {
	// Schema holds every table of the sink [public]. Names are quoted, never interpolated.
	Schema string
	// Aggregates describes the merged table (see [sink.AggregateSpec] for its defaults).
	Aggregates sink.AggregateSpec
	// PartialsTable stores one row per (window_start, dimension, dimension_id, topic,
	// partition) [<Aggregates.Table>_partials].
	PartialsTable string
	// ProgressTable stores closed_through per (topic, partition) [streamledger_progress].
	ProgressTable string
	// States are the last-write-wins tables the sink may upsert into.
	States []sink.StateSpec
	// Strategy moves batches of rows [StrategyDefault].
	Strategy Strategy
	// LockBuckets bounds the advisory locks a close batch takes: each key locks the bucket
	// its hash falls in, buckets taken in ascending order [256]. More buckets let writers of
	// different keys overlap more, at the cost of more entries in the server's lock table
	// (max_locks_per_transaction) for a large batch.
	LockBuckets int
	// Retry bounds the retries of transient failures (see [sink.RetryPolicy]).
	Retry sink.RetryPolicy
	// Clock stamps computed_at, written_at, updated_at [time.Now]. Values are sent as
	// parameters, so an injected clock makes every stored column deterministic.
	Clock func() time.Time
	// Hooks are called at fixed points of every attempt (fault injection in tests).
	Hooks Hooks
}

// Point is a place in a write attempt where [Hooks.At] is called.
type Point int

const (
	// BeforeBegin: nothing of the attempt has reached the server yet.
	BeforeBegin Point = iota + 1
	// AfterMarker (effects only): the marker insert ran inside the open transaction.
	AfterMarker
	// BeforeCommit: every statement of the attempt ran; the transaction is still open.
	BeforeCommit
	// AfterCommit: the transaction committed; the call has not returned yet.
	AfterCommit
)

func (p Point) String() string {
	switch p {
	case BeforeBegin:
		return "before-begin"
	case AfterMarker:
		return "after-marker"
	case BeforeCommit:
		return "before-commit"
	case AfterCommit:
		return "after-commit"
	default:
		return fmt.Sprintf("Point(%d)", int(p))
	}
}

// Attempt describes the attempt a hook is called in.
type Attempt struct {
	Op string // "write close", "upsert latest", "apply effect"
	N  int    // 1-based attempt number
	// PID is the server process of the attempt's connection, 0 before a connection is held.
	PID uint32
}

// Hooks inject faults. A non-nil error from At makes the attempt fail at that point with
// that error, exactly as a failing statement would: inside a transaction it is rolled back;
// at [AfterCommit] the write is durable but the call reports the error. The error is
// classified like any other, so a hook may return a transient server error to exercise
// retries. Nil hooks cost nothing.
type Hooks struct {
	At func(ctx context.Context, p Point, a Attempt) error
}

func (h Hooks) call(ctx context.Context, p Point, a Attempt) error {
	if h.At == nil {
		return nil
	}
	return h.At(ctx, p, a)
}

func (c Config) withDefaults() Config {
	if c.Schema == "" {
		c.Schema = "public"
	}
	c.Aggregates = c.Aggregates.WithDefaults()
	if c.PartialsTable == "" {
		c.PartialsTable = c.Aggregates.Table + "_partials"
	}
	if c.ProgressTable == "" {
		c.ProgressTable = "streamledger_progress"
	}
	if c.Strategy == StrategyDefault {
		c.Strategy = StrategyUnnest
	}
	if c.LockBuckets <= 0 {
		c.LockBuckets = 256
	}
	c.Retry = c.Retry.WithDefaults()
	if c.Clock == nil {
		c.Clock = time.Now
	}
	c.States = slices.Clone(c.States)
	return c
}

// partialFixed returns the partials table's own columns; attributes must not reuse them.
func partialFixed() []string {
	return []string{"window_start", "dimension", "dimension_id", "topic", "partition", "window_end", "stats", "written_at"}
}

func (c Config) validate() error {
	if err := c.Aggregates.Validate(); err != nil {
		return err
	}
	for _, a := range c.Aggregates.Attributes {
		if slices.Contains(partialFixed(), a) {
			return fmt.Errorf("%w: attribute %q collides with a column of the partials table %q", sink.ErrInvalid, a, partialFixed())
		}
	}
	if c.Strategy < StrategyUnnest || c.Strategy > StrategyRowByRow {
		return fmt.Errorf("%w: unknown strategy %d", sink.ErrInvalid, int(c.Strategy))
	}
	tables := map[string]string{c.Aggregates.Table: "aggregates", c.PartialsTable: "partials"}
	if other, ok := tables[c.ProgressTable]; ok {
		return fmt.Errorf("%w: progress table %q is also the %s table", sink.ErrInvalid, c.ProgressTable, other)
	}
	if c.Aggregates.Table == c.PartialsTable {
		return fmt.Errorf("%w: partials table %q is also the aggregates table", sink.ErrInvalid, c.PartialsTable)
	}
	tables[c.ProgressTable] = "progress"
	for _, st := range c.States {
		if err := st.Validate(); err != nil {
			return err
		}
		if other, ok := tables[st.Table]; ok {
			return fmt.Errorf("%w: state table %q is also the %s table", sink.ErrInvalid, st.Table, other)
		}
		tables[st.Table] = "state"
	}
	return nil
}
