package postgres

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
// refuses it anywhere else with an error wrapping [sink.ErrConfig] that names the field.
type Config struct {
	// Schema holds every table of the sink. Names are quoted, never interpolated. Empty
	// means public (the default).
	Schema string
	// Aggregates describes the merged table (see [sink.AggregateSpec] for its defaults).
	// The folded windows and the contributing topics are kept beside it, in
	// <Aggregates.Table>_folded and <Aggregates.Table>_topics.
	Aggregates sink.AggregateSpec
	// PartialsTable stores the partials of windows that are not complete, one compact row
	// per (window_start, topic, partition). Empty means <Aggregates.Table>_partials (the
	// default).
	PartialsTable string
	// ProgressTable stores closed_through per (topic, partition). Empty means
	// streamledger_progress (the default).
	ProgressTable string
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
}

func (c Config) withDefaults() Config {
	if c.Schema == "" {
		c.Schema = "public"
	}
	c.Aggregates = specs.WithDefaults(c.Aggregates)
	if c.PartialsTable == "" {
		c.PartialsTable = c.Aggregates.Table + "_partials"
	}
	if c.ProgressTable == "" {
		c.ProgressTable = "streamledger_progress"
	}
	c.Retry = retry.Resolve(c.Retry)
	if c.Clock == nil {
		c.Clock = time.Now
	}
	c.States = slices.Clone(c.States)
	return c
}

func (c Config) validate() error {
	if err := specs.CheckAggregate("Config.Aggregates", c.Aggregates); err != nil {
		return err
	}
	if err := report.Check("Config.Hooks", c.Hooks); err != nil {
		return err
	}
	tables := map[string]string{}
	for _, t := range []struct{ name, role string }{
		{c.Aggregates.Table, "Config.Aggregates.Table"}, {c.PartialsTable, "Config.PartialsTable"},
		{c.foldedTable(), "folded"}, {c.topicsTable(), "topics"}, {c.ProgressTable, "Config.ProgressTable"},
	} {
		if other, ok := tables[t.name]; ok {
			return fmt.Errorf("%w: %s %q is also the %s table", sink.ErrConfig, t.role, t.name, other)
		}
		tables[t.name] = t.role
	}
	for i, st := range c.States {
		if err := specs.CheckState(fmt.Sprintf("Config.States[%d]", i), st); err != nil {
			return err
		}
		if other, ok := tables[st.Table]; ok {
			return fmt.Errorf("%w: Config.States[%d].Table %q is also the %s table", sink.ErrConfig, i, st.Table, other)
		}
		tables[st.Table] = "state"
	}
	return nil
}
