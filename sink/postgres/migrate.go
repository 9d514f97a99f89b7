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

// migration is the versioned DDL of one object set: steps[i] brings it to version first+i.
// ensure runs on every Migrate, after the steps, and must be idempotent.
type migration struct {
	object string
	// first is the version steps[0] creates; zero means 1. An object set recorded at a lower
	// version holds a layout that this build does not convert, and Migrate refuses it.
	first  int
	steps  [][]string
	ensure []string
	// view is the quoted name of a view that viewDDL creates or replaces, after ensure.
	view, viewDDL string
}

func (s *Sink) migrations() []migration {
	cfg := s.cfg
	a := cfg.Aggregates
	c := a.Columns
	schema := cfg.Schema
	var out []migration

	prog := ident(schema, cfg.ProgressTable)
	out = append(out, migration{object: "progress:" + cfg.ProgressTable, steps: [][]string{{
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s ("topic" text NOT NULL, "partition" integer NOT NULL, `+
			`"closed_through" timestamptz NOT NULL, "updated_at" timestamptz NOT NULL, PRIMARY KEY ("topic", "partition"))`, prog),
	}, {
		// Version 2: a registered partition that has closed nothing has no closed_through
		// (it was stored as the zero time), and a partition can be marked empty.
		fmt.Sprintf(`ALTER TABLE %s ALTER COLUMN "closed_through" DROP NOT NULL`, prog),
		fmt.Sprintf(`ALTER TABLE %s ADD COLUMN IF NOT EXISTS "empty" boolean NOT NULL DEFAULT false`, prog),
		fmt.Sprintf(`UPDATE %s SET "closed_through" = NULL WHERE "closed_through" = '0001-01-01 00:00:00+00'`, prog),
	}}})

	var attrCols strings.Builder
	for _, at := range a.Attributes {
		fmt.Fprintf(&attrCols, "%s text, ", ident(at))
	}
	// The aggregates' versions start at 3 (a lower one recorded is a layout Migrate refuses):
	// the compact partials, one row per (window, source partition), the folded windows and
	// the contributing topics beside the merged table.
	agg := migration{object: "aggregates:" + a.Table, first: 3, steps: [][]string{{
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s ("window_start" timestamptz NOT NULL, "topic" text NOT NULL, "partition" integer NOT NULL, `+
			`"window_end" timestamptz NOT NULL, "keys" integer NOT NULL, "entries" bytea NOT NULL, "written_at" timestamptz NOT NULL, `+
			`PRIMARY KEY ("window_start", "topic", "partition"))`, ident(schema, cfg.PartialsTable)),
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s ("window_start" timestamptz PRIMARY KEY, "window_end" timestamptz NOT NULL, `+
			`"keys" integer NOT NULL, "entries" bytea NOT NULL, "folded_at" timestamptz NOT NULL)`, ident(schema, cfg.foldedTable())),
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s ("topic" text PRIMARY KEY, "since" timestamptz NOT NULL)`, ident(schema, cfg.topicsTable())),
		// A merged row is written once, when its window folds: pages can be full.
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (%s timestamptz NOT NULL, %s timestamptz NOT NULL, %s text NOT NULL, %s text NOT NULL, `+
			`%s%s bigint NOT NULL, %s double precision NOT NULL, %s double precision NOT NULL, %s double precision NOT NULL, `+
			`%s double precision NOT NULL, %s timestamptz NOT NULL, PRIMARY KEY (%s, %s, %s))`,
			ident(schema, a.Table), ident(c.WindowStart), ident(c.WindowEnd), ident(c.Dimension), ident(c.DimensionID),
			attrCols.String(), ident(c.Count), ident(c.Mean), ident(c.Quantile), ident(c.Max), ident(c.Min), ident(c.ComputedAt),
			ident(c.WindowStart), ident(c.Dimension), ident(c.DimensionID)),
	}}}
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
			m.steps = [][]string{
				{fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (%s, PRIMARY KEY (%s))",
					ident(schema, st.Table), strings.Join(cols, ", "), strings.Join(keys, ", "))},
				{fmt.Sprintf("ALTER TABLE %s SET (fillfactor = 50)", ident(schema, st.Table))},
			}
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
			out = append(out, st...)
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
		first := max(m.first, 1)
		latest := first + len(m.steps) - 1
		switch {
		case have > latest:
			return fmt.Errorf("%w: %s is at version %d, this build knows %d", ErrSchemaTooNew, m.object, have, latest)
		case have > 0 && have < first:
			return fmt.Errorf("postgres: migrate %s: version %d is a layout this build does not convert, "+
				"expected version %d or later: drop its tables and write them again", m.object, have, first)
		}
		for v := max(have, first-1); v < latest; v++ {
			for _, stmt := range m.steps[v-first+1] {
				if _, err := tx.Exec(ctx, stmt); err != nil {
					return fmt.Errorf("postgres: migrate %s to version %d: %w", m.object, v+1, err)
				}
			}
		}
		if have < latest {
			if _, err := tx.Exec(ctx, fmt.Sprintf(`INSERT INTO %s ("object", "version") VALUES ($1, $2) `+
				`ON CONFLICT ("object") DO UPDATE SET "version" = EXCLUDED."version", "applied_at" = now()`, mt), m.object, latest); err != nil {
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
