package mysql

import (
	"fmt"
	"slices"
	"time"

	"github.com/streamledger/streamledger/internal/retry"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/report"
	"github.com/streamledger/streamledger/sink/internal/specs"
)

// Config configures a [Sink]. In every field, zero (or empty) means the default the field
// states; a negative value is accepted only where the field says what it means, and [New]
// refuses it anywhere else with an error wrapping [sink.ErrConfig] that names the field. The
// tables live in the database the *sql.DB's connections use (the DSN's); [Sink.Migrate]
// refuses a DSN that names none.
type Config struct {
	// Aggregates describes the merged table (see [sink.AggregateSpec] for its defaults).
	// The folded windows and the contributing topics are kept beside it, in
	// <Aggregates.Table>_folded and <Aggregates.Table>_topics, and the readiness view is
	// <Aggregates.Table>_status.
	Aggregates sink.AggregateSpec
	// PartialsTable stores the partials of windows that are not complete, one compact row
	// per (window_start, topic, partition). Empty means <Aggregates.Table>_partials (the
	// default).
	PartialsTable string
	// ProgressTable stores closed_through per (topic, partition). Empty means
	// streamledger_progress (the default).
	ProgressTable string
	// LocksTable holds one row per aggregates table, locked (SELECT ... FOR UPDATE) by every
	// close write of that table, so that the close writes of one table run one at a time.
	// Empty means streamledger_locks (the default).
	LocksTable string
	// States are the last-write-wins tables the sink may upsert into.
	States []sink.StateSpec
	// Horizon is how long a folded window is kept after it was folded (by Clock), so that a
	// partition registered later can still be merged into it. Past it a window's merged rows
	// are final. Zero means 7 days (the default); negative means folded windows are kept
	// forever.
	Horizon time.Duration
	// SourceRetention is how far back the sources can redeliver (the topics'
	// retention.ms), so that New can refuse a Horizon shorter than it with an error wrapping
	// [sink.ErrHorizon]. Zero declares nothing (the default); negative means the sources keep
	// records forever, which only a negative Horizon covers.
	SourceRetention time.Duration
	// Retry bounds the retries of transient failures (see [sink.RetryPolicy] for its
	// defaults).
	Retry sink.RetryPolicy
	// Clock stamps computed_at, written_at, folded_at and updated_at, and places the
	// horizon. Values are sent as parameters, so an injected clock makes every stored column
	// deterministic. Nil means time.Now (the default).
	Clock func() time.Time
	// Hooks observe the sink's writes (see [sink.Hook]): each value implements
	// sink.HookWriteClose, sink.HookUpsertLatest or both, or New refuses it. They are
	// called after each call, on the caller's goroutine.
	Hooks []sink.Hook
	// MaxStatementBytes bounds the parameter bytes of one multi-row statement; a batch
	// above it is sent in several statements of the same transaction. It must stay below the
	// server's max_allowed_packet. Zero means 4 MiB (the default); a negative value is
	// refused.
	MaxStatementBytes int
}

// defaultStatementBytes is the default of [Config.MaxStatementBytes]: well below the
// smallest default max_allowed_packet of MySQL 8 and MariaDB (16 MiB).
const defaultStatementBytes = 4 << 20

func (c Config) withDefaults() Config {
	c.Aggregates = specs.WithDefaults(c.Aggregates)
	if c.PartialsTable == "" {
		c.PartialsTable = c.Aggregates.Table + "_partials"
	}
	if c.ProgressTable == "" {
		c.ProgressTable = "streamledger_progress"
	}
	if c.LocksTable == "" {
		c.LocksTable = "streamledger_locks"
	}
	c.Retry = retry.Resolve(c.Retry)
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.MaxStatementBytes == 0 {
		c.MaxStatementBytes = defaultStatementBytes
	}
	c.States = slices.Clone(c.States)
	return c
}

// Names of the tables beside the merged one (see the package documentation).
func (c Config) foldedTable() string { return c.Aggregates.Table + "_folded" }
func (c Config) topicsTable() string { return c.Aggregates.Table + "_topics" }
func (c Config) statusView() string  { return c.Aggregates.Table + "_status" }

func (c Config) validate() error {
	if err := specs.CheckAggregate("Config.Aggregates", c.Aggregates); err != nil {
		return err
	}
	if err := report.Check("Config.Hooks", c.Hooks); err != nil {
		return err
	}
	if c.MaxStatementBytes < 0 {
		return fmt.Errorf("%w: Config.MaxStatementBytes is %d, want zero for the default or a positive bound", sink.ErrConfig, c.MaxStatementBytes)
	}
	tables := map[string]string{}
	for _, t := range []struct{ name, role string }{
		{c.Aggregates.Table, "Config.Aggregates.Table"}, {c.PartialsTable, "Config.PartialsTable"},
		{c.foldedTable(), "folded"}, {c.topicsTable(), "topics"}, {c.ProgressTable, "Config.ProgressTable"},
		{c.statusView(), "readiness view"}, {c.LocksTable, "Config.LocksTable"}, {migrationsTable, "migrations"},
	} {
		if err := checkName(t.role, t.name); err != nil {
			return fmt.Errorf("%w: %w", sink.ErrConfig, err)
		}
		if other, ok := tables[t.name]; ok {
			return fmt.Errorf("%w: %s %q is also the %s table", sink.ErrConfig, t.role, t.name, other)
		}
		tables[t.name] = t.role
	}
	for _, name := range specs.Columns(c.Aggregates) {
		if err := checkName("Config.Aggregates.Columns", name); err != nil {
			return fmt.Errorf("%w: %w", sink.ErrConfig, err)
		}
	}
	for i, st := range c.States {
		if err := specs.CheckState(fmt.Sprintf("Config.States[%d]", i), st); err != nil {
			return err
		}
		if other, ok := tables[st.Table]; ok {
			return fmt.Errorf("%w: Config.States[%d].Table %q is also the %s table", sink.ErrConfig, i, st.Table, other)
		}
		tables[st.Table] = "state"
		for _, name := range append([]string{st.Table}, specs.StateColumns(st)...) {
			if err := checkName(fmt.Sprintf("Config.States[%d]", i), name); err != nil {
				return fmt.Errorf("%w: %w", sink.ErrConfig, err)
			}
		}
	}
	return nil
}
