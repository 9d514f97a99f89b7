package postgres

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/fold"
)

// compactTables returns the DDL of the tables of version 3 of the aggregates: compact
// partials, folded windows and contributing topics.
func (s *Sink) compactTables() []string {
	cfg := s.cfg
	return []string{
		fmt.Sprintf(`CREATE TABLE %s ("window_start" timestamptz NOT NULL, "topic" text NOT NULL, "partition" integer NOT NULL, `+
			`"window_end" timestamptz NOT NULL, "keys" integer NOT NULL, "entries" bytea NOT NULL, "written_at" timestamptz NOT NULL, `+
			`PRIMARY KEY ("window_start", "topic", "partition"))`, ident(cfg.Schema, cfg.PartialsTable)),
		fmt.Sprintf(`CREATE TABLE %s ("window_start" timestamptz PRIMARY KEY, "window_end" timestamptz NOT NULL, `+
			`"keys" integer NOT NULL, "entries" bytea NOT NULL, "folded_at" timestamptz NOT NULL)`, ident(cfg.Schema, cfg.foldedTable())),
		fmt.Sprintf(`CREATE TABLE %s ("topic" text PRIMARY KEY, "since" timestamptz NOT NULL)`, ident(cfg.Schema, cfg.topicsTable())),
	}
}

// upgradeCompact converts the per-key partials of versions 1 and 2 in place: the old table
// is renamed, the new tables created, and each window's partials become, if the window is
// complete by the stored progress, its folded row (its merged rows rewritten from them, as
// a fold writes them), and otherwise compact rows, with the window's merged rows deleted
// (they were still filling; the window's fold writes them). The old table is then dropped.
func (s *Sink) upgradeCompact(ctx context.Context, tx pgx.Tx) error {
	cfg := s.cfg
	old := cfg.PartialsTable + "_v2"
	var pkey string
	if err := tx.QueryRow(ctx, `SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid `+
		`WHERE i.indrelid = $1::regclass AND i.indisprimary`, ident(cfg.Schema, cfg.PartialsTable)).Scan(&pkey); err != nil {
		return fmt.Errorf("find the primary key of %s: %w", ident(cfg.Schema, cfg.PartialsTable), err)
	}
	stmts := []string{
		fmt.Sprintf("ALTER TABLE %s RENAME TO %s", ident(cfg.Schema, cfg.PartialsTable), ident(old)),
		fmt.Sprintf("ALTER INDEX %s RENAME TO %s", ident(cfg.Schema, pkey), ident(old+"_pkey")),
	}
	for _, stmt := range append(stmts, s.compactTables()...) {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	c, err := s.oldLayoutCall(ctx, tx, old)
	if err != nil {
		return err
	}
	rows, err := tx.Query(ctx, fmt.Sprintf(`SELECT DISTINCT "window_start" FROM %s ORDER BY 1`, ident(cfg.Schema, old)))
	if err != nil {
		return err
	}
	starts, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
	if err != nil {
		return fmt.Errorf("read the windows of %s: %w", ident(cfg.Schema, old), err)
	}
	sel, err := s.oldPartialsQuery(ctx, tx, old)
	if err != nil {
		return err
	}
	now := cfg.Clock().UTC()
	for _, start := range starts {
		if err := s.upgradeWindow(ctx, tx, c, sel, start, now); err != nil {
			return fmt.Errorf("convert the partials of the window at %s: %w", start.UTC().Format(time.RFC3339), err)
		}
	}
	_, err = tx.Exec(ctx, "DROP TABLE "+ident(cfg.Schema, old))
	return err
}

// oldLayoutCall records the topics of the old partials as contributing and returns a call
// without batches whose progress is the stored one: it plans the fold of complete windows.
func (s *Sink) oldLayoutCall(ctx context.Context, tx pgx.Tx, old string) (*fold.Call, error) {
	cfg := s.cfg
	if _, err := tx.Exec(ctx, fmt.Sprintf(`INSERT INTO %s ("topic", "since") SELECT DISTINCT "topic", $1::timestamptz FROM %s`,
		ident(cfg.Schema, cfg.topicsTable()), ident(cfg.Schema, old)), cfg.Clock().UTC()); err != nil {
		return nil, fmt.Errorf("record contributing topics: %w", err)
	}
	rows, err := tx.Query(ctx, s.readTopics)
	if err != nil {
		return nil, err
	}
	topics, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	rows, err = tx.Query(ctx, fmt.Sprintf(`SELECT "topic", "partition", "closed_through", "empty" FROM %s`, ident(cfg.Schema, cfg.ProgressTable)))
	if err != nil {
		return nil, err
	}
	var progress []fold.Progress
	var p fold.Progress
	var ct *time.Time
	if _, err := pgx.ForEachRow(rows, []any{&p.Source.Topic, &p.Source.Partition, &ct, &p.Empty}, func() error {
		p.ClosedThrough = time.Time{}
		if ct != nil {
			p.ClosedThrough = *ct
		}
		progress = append(progress, p)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read progress: %w", err)
	}
	c, err := fold.NewCall(s.codec, cfg.Aggregates, nil)
	if err != nil {
		return nil, err
	}
	c.SetProgress(progress, topics)
	return c, nil
}

// oldPartialsQuery selects one window's old partials; an attribute the old table lacks
// reads as NULL.
func (s *Sink) oldPartialsQuery(ctx context.Context, tx pgx.Tx, old string) (string, error) {
	rows, err := tx.Query(ctx, `SELECT attname FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped`,
		ident(s.cfg.Schema, old))
	if err != nil {
		return "", err
	}
	have, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", err
	}
	sel := `SELECT "window_end", "topic", "partition", "dimension", "dimension_id", "stats"`
	for _, a := range s.cfg.Aggregates.Attributes {
		if slices.Contains(have, a) {
			sel += ", " + ident(a)
		} else {
			sel += ", NULL::text"
		}
	}
	return sel + " FROM " + ident(s.cfg.Schema, old) + ` WHERE "window_start" = $1`, nil
}

// upgradeWindow converts the old partials of the window at start.
func (s *Sink) upgradeWindow(ctx context.Context, tx pgx.Tx, c *fold.Call, sel string, start, now time.Time) error {
	rows, err := tx.Query(ctx, sel, start)
	if err != nil {
		return err
	}
	bySource := map[sink.TopicPartition]*fold.Partials{}
	var end time.Time
	var src sink.TopicPartition
	var e fold.Entry
	attrs := make([]*string, len(s.cfg.Aggregates.Attributes))
	dst := []any{&end, &src.Topic, &src.Partition, &e.Dimension, &e.DimensionID, &e.Stats}
	for i := range attrs {
		dst = append(dst, &attrs[i])
	}
	if _, err := pgx.ForEachRow(rows, dst, func() error {
		p := bySource[src]
		if p == nil {
			p = &fold.Partials{Start: start.UTC(), End: end.UTC(), Source: src}
			bySource[src] = p
		}
		e.Attrs = slices.Clone(attrs)
		p.Entries = append(p.Entries, e)
		e.Stats = nil
		return nil
	}); err != nil {
		return err
	}
	var partials []fold.Partials
	for _, p := range bySource {
		slices.SortFunc(p.Entries, func(a, b fold.Entry) int {
			return cmp.Or(cmp.Compare(a.Dimension, b.Dimension), cmp.Compare(a.DimensionID, b.DimensionID))
		})
		partials = append(partials, *p)
	}
	if through, ok := c.Through(); ok && !end.After(through) {
		plan, err := c.Plan(partials, nil, nil)
		if err != nil {
			return err
		}
		return s.sendPlan(ctx, tx, plan, now, false)
	}
	if _, err := tx.Exec(ctx, fmt.Sprintf("DELETE FROM %s WHERE %s = $1", ident(s.cfg.Schema, s.cfg.Aggregates.Table),
		ident(s.cfg.Aggregates.Columns.WindowStart)), start); err != nil {
		return err
	}
	return s.sendPlan(ctx, tx, &fold.Plan{Partials: partials}, now, false)
}
