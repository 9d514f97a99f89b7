package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/specs"
)

// migrationsTable records the schema version of every object set the library created.
const migrationsTable = "streamledger_migrations"

// migrateLock serializes every migration in the database: concurrent CREATE ... IF NOT
// EXISTS statements can otherwise fail on the catalogs' unique indexes.
const migrateLock int64 = 0x73746c6d6967 // "stlmig"

// ErrSchemaTooNew is returned by Migrate when the database holds a newer schema version than
// this build knows: an older binary must not write into it.
var ErrSchemaTooNew = errors.New("postgres: schema version is newer than this build")

// migration is the versioned DDL of one object set: step i brings it to version i+1. ensure
// runs on every Migrate, after the steps, and must be idempotent.
type migration struct {
	object string
	steps  []step
	ensure []string
	// view is the quoted name of a view that viewDDL creates or replaces, after ensure.
	view, viewDDL string
}

// step is one version of an object set: its statements, then run when set.
type step struct {
	sql []string
	run func(ctx context.Context, tx pgx.Tx) error
}

func sqlSteps(versions ...[]string) []step {
	out := make([]step, len(versions))
	for i, v := range versions {
		out[i] = step{sql: v}
	}
	return out
}

func (s *Sink) migrations() []migration {
	cfg := s.cfg
	a := cfg.Aggregates
	c := a.Columns
	schema := cfg.Schema
	var out []migration

	prog := ident(schema, cfg.ProgressTable)
	out = append(out, migration{object: "progress:" + cfg.ProgressTable, steps: sqlSteps([]string{
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s ("topic" text NOT NULL, "partition" integer NOT NULL, `+
			`"closed_through" timestamptz NOT NULL, "updated_at" timestamptz NOT NULL, PRIMARY KEY ("topic", "partition"))`, prog),
	}, []string{
		// Version 2: a registered partition that has closed nothing has no closed_through
		// (it was stored as the zero time), and a partition can be marked empty.
		fmt.Sprintf(`ALTER TABLE %s ALTER COLUMN "closed_through" DROP NOT NULL`, prog),
		fmt.Sprintf(`ALTER TABLE %s ADD COLUMN IF NOT EXISTS "empty" boolean NOT NULL DEFAULT false`, prog),
		fmt.Sprintf(`UPDATE %s SET "closed_through" = NULL WHERE "closed_through" = '0001-01-01 00:00:00+00'`, prog),
	})})

	var attrCols strings.Builder
	for _, at := range a.Attributes {
		fmt.Fprintf(&attrCols, "%s text, ", ident(at))
	}
	// Versions 1 and 2 kept one partial row per (key, source) and rewrote each merged row
	// once per contributing partition; version 3 converts that layout in place (see
	// upgradeCompact).
	agg := migration{object: "aggregates:" + a.Table, steps: []step{{sql: []string{
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s ("window_start" timestamptz NOT NULL, "dimension" text NOT NULL, `+
			`"dimension_id" text NOT NULL, "topic" text NOT NULL, "partition" integer NOT NULL, "window_end" timestamptz NOT NULL, `+
			`"stats" bytea NOT NULL, %s"written_at" timestamptz NOT NULL, `+
			`PRIMARY KEY ("window_start", "dimension", "dimension_id", "topic", "partition"))`,
			ident(schema, cfg.PartialsTable), attrCols.String()),
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (%s timestamptz NOT NULL, %s timestamptz NOT NULL, %s text NOT NULL, %s text NOT NULL, `+
			`%s%s bigint NOT NULL, %s double precision NOT NULL, %s double precision NOT NULL, %s double precision NOT NULL, `+
			`%s double precision NOT NULL, %s timestamptz NOT NULL, PRIMARY KEY (%s, %s, %s)) WITH (fillfactor = 80)`,
			ident(schema, a.Table), ident(c.WindowStart), ident(c.WindowEnd), ident(c.Dimension), ident(c.DimensionID),
			attrCols.String(), ident(c.Count), ident(c.Mean), ident(c.Quantile), ident(c.Max), ident(c.Min), ident(c.ComputedAt),
			ident(c.WindowStart), ident(c.Dimension), ident(c.DimensionID)),
	}}, {sql: []string{
		fmt.Sprintf(`ALTER TABLE %s SET (fillfactor = 50)`, ident(schema, a.Table)),
	}}, {sql: []string{
		"DROP VIEW IF EXISTS " + s.view,
		// A merged row is written once, when its window folds: pages can be full.
		fmt.Sprintf(`ALTER TABLE %s RESET (fillfactor)`, ident(schema, a.Table)),
	}, run: s.upgradeCompact}}}
	for _, at := range a.Attributes {
		agg.ensure = append(agg.ensure, fmt.Sprintf("ALTER TABLE %s ADD COLUMN IF NOT EXISTS %s text", ident(schema, a.Table), ident(at)))
	}
	agg.view, agg.viewDDL = s.view, s.viewDDL()
	out = append(out, agg)

	for _, st := range cfg.States {
		m := migration{object: "state:" + st.Table}
		if specs.Typed(st) {
			var cols, keys []string
			for _, k := range st.Key {
				cols = append(cols, fmt.Sprintf("%s %s NOT NULL", ident(k.Name), sqlType(k.Type)))
				keys = append(keys, ident(k.Name))
			}
			cols = append(cols, fmt.Sprintf("%s %s NOT NULL", ident(st.ObservedAt.Name), sqlType(st.ObservedAt.Type)))
			for _, v := range st.Values {
				cols = append(cols, fmt.Sprintf("%s %s", ident(v.Name), sqlType(v.Type)))
			}
			if st.UpdatedAt != "" {
				cols = append(cols, fmt.Sprintf("%s timestamptz", ident(st.UpdatedAt)))
			}
			// Version 2: every upsert of a known key is an update, and at fillfactor 50 it
			// finds room on its own page, so Postgres updates it in place (HOT) without touching
			// the primary key index.
			m.steps = sqlSteps(
				[]string{fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (%s, PRIMARY KEY (%s))",
					ident(schema, st.Table), strings.Join(cols, ", "), strings.Join(keys, ", "))},
				[]string{fmt.Sprintf("ALTER TABLE %s SET (fillfactor = 50)", ident(schema, st.Table))},
			)
		}
		out = append(out, m)
	}
	return out
}

// sqlType returns the Postgres type of a column of type t.
func sqlType(t sink.ColumnType) string {
	switch t {
	case sink.Text:
		return "text"
	case sink.Int32:
		return "integer"
	case sink.Int64:
		return "bigint"
	case sink.Float64:
		return "double precision"
	case sink.Bool:
		return "boolean"
	case sink.Timestamp:
		return "timestamptz"
	case sink.Bytes:
		return "bytea"
	}
	panic(fmt.Sprintf("postgres: no SQL type for column type %v", t)) // Validate refused it
}

// viewDDL creates the readiness view: the merged table plus complete_through, the minimum
// closed_through over the partitions that hold windows back (registered partitions of the
// contributing topics, but those marked empty that have closed nothing; NULL when one of
// them has closed nothing, infinity when there is none), and complete = window_end <=
// complete_through. The attributes
// come last so that adding one can replace the view in place.
func (s *Sink) viewDDL() string {
	cfg := s.cfg
	a := cfg.Aggregates
	c := a.Columns
	cols := []string{c.WindowStart, c.WindowEnd, c.Dimension, c.DimensionID, c.Count, c.Mean, c.Quantile, c.Max, c.Min, c.ComputedAt}
	return fmt.Sprintf(`CREATE OR REPLACE VIEW %s AS SELECT %s, r."complete_through", `+
		`COALESCE(a.%s <= r."complete_through", false) AS "complete"%s FROM %s AS a CROSS JOIN `+
		`(SELECT CASE WHEN bool_or(pr."closed_through" IS NULL) THEN NULL WHEN count(*) = 0 THEN 'infinity'::timestamptz `+
		`ELSE min(pr."closed_through") END AS "complete_through" `+
		`FROM %s AS pr JOIN %s AS t ON t."topic" = pr."topic" WHERE NOT (pr."empty" AND pr."closed_through" IS NULL)) AS r`,
		s.view, quoteAll("a.", cols), ident(c.WindowEnd), prefixed(", ", quoteAll("a.", a.Attributes)), ident(cfg.Schema, a.Table),
		ident(cfg.Schema, cfg.ProgressTable), ident(cfg.Schema, cfg.topicsTable()))
}

func (s *Sink) migrationStatements() []string {
	var out []string
	for _, m := range s.migrations() {
		for _, st := range m.steps {
			out = append(out, st.sql...)
		}
		out = append(out, m.ensure...)
		if m.viewDDL != "" {
			out = append(out, m.viewDDL)
		}
	}
	return out
}

// Migrate creates or upgrades the sink's tables and the readiness view. It is idempotent and
// safe to run from several processes at once: it runs in one transaction under a
// database-wide advisory lock, and records a version per object set in
// streamledger_migrations. State tables are created only when their spec has column types.
func (s *Sink) Migrate(ctx context.Context) error {
	return migrate(ctx, s.pool, s.cfg.Schema, s.migrations())
}

func migrate(ctx context.Context, pool interface {
	BeginTx(context.Context, pgx.TxOptions) (pgx.Tx, error)
}, schema string, ms []migration) (err error) {
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return fmt.Errorf("postgres: migrate: begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(ctx)
		}
	}()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrateLock); err != nil {
		return fmt.Errorf("postgres: migrate: lock: %w", err)
	}
	mt := ident(schema, migrationsTable)
	for _, stmt := range []string{
		"CREATE SCHEMA IF NOT EXISTS " + ident(schema),
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s ("object" text PRIMARY KEY, "version" integer NOT NULL, "applied_at" timestamptz NOT NULL DEFAULT now())`, mt),
	} {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("postgres: migrate: %s: %w", stmt, err)
		}
	}
	for _, m := range ms {
		var have int
		err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT "version" FROM %s WHERE "object" = $1`, mt), m.object).Scan(&have)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("postgres: migrate %s: read version: %w", m.object, err)
		}
		if have > len(m.steps) {
			return fmt.Errorf("%w: %s is at version %d, this build knows %d", ErrSchemaTooNew, m.object, have, len(m.steps))
		}
		for v := have; v < len(m.steps); v++ {
			for _, stmt := range m.steps[v].sql {
				if _, err := tx.Exec(ctx, stmt); err != nil {
					return fmt.Errorf("postgres: migrate %s to version %d: %w", m.object, v+1, err)
				}
			}
			if run := m.steps[v].run; run != nil {
				if err := run(ctx, tx); err != nil {
					return fmt.Errorf("postgres: migrate %s to version %d: %w", m.object, v+1, err)
				}
			}
		}
		if have < len(m.steps) {
			if _, err := tx.Exec(ctx, fmt.Sprintf(`INSERT INTO %s ("object", "version") VALUES ($1, $2) `+
				`ON CONFLICT ("object") DO UPDATE SET "version" = EXCLUDED."version", "applied_at" = now()`, mt), m.object, len(m.steps)); err != nil {
				return fmt.Errorf("postgres: migrate %s: record version: %w", m.object, err)
			}
		}
		for _, stmt := range m.ensure {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("postgres: migrate %s: %w", m.object, err)
			}
		}
		if m.viewDDL != "" {
			if err := replaceView(ctx, tx, m.view, m.viewDDL); err != nil {
				return fmt.Errorf("postgres: migrate %s: view: %w", m.object, err)
			}
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: migrate: commit: %w", err)
	}
	return nil
}

// replaceView runs ddl, a CREATE OR REPLACE VIEW. A view whose columns changed other than
// by appending cannot be replaced in place; it is dropped and created again.
func replaceView(ctx context.Context, tx pgx.Tx, name, ddl string) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	if _, err := sp.Exec(ctx, ddl); err == nil {
		return sp.Commit(ctx)
	}
	if err := sp.Rollback(ctx); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "DROP VIEW IF EXISTS "+name); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, ddl)
	return err
}
