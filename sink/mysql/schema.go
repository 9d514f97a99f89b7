package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/specs"
)

// binaryCollations are the utf8mb4 collations that compare strings byte by byte without
// padding (MySQL 8, MariaDB), most preferred first: two keys are the same row only when they
// are the same string, as in the other sinks. utf8mb4_bin, the fallback, ignores trailing
// spaces.
var binaryCollations = []string{"utf8mb4_0900_bin", "utf8mb4_nopad_bin"}

// tableOptions ends every CREATE TABLE: InnoDB, utf8mb4 in the chosen collation.
func tableOptions(collation string) string {
	return " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=" + collation
}

// collation returns the first of binaryCollations the server knows, or utf8mb4_bin.
func collation(ctx context.Context, db *sql.DB) (string, error) {
	var name string
	err := db.QueryRowContext(ctx, "SELECT `COLLATION_NAME` FROM information_schema.`COLLATIONS` WHERE `COLLATION_NAME` IN (?, ?) "+
		"ORDER BY `COLLATION_NAME` = ? DESC LIMIT 1", binaryCollations[0], binaryCollations[1], binaryCollations[0]).Scan(&name)
	if errors.Is(err, sql.ErrNoRows) {
		return "utf8mb4_bin", nil
	}
	return name, err
}

// sqlType returns the MySQL type of a state table's column of type t; key columns are
// bounded so that they can be indexed.
func sqlType(t sink.ColumnType, key bool) string {
	switch t {
	case sink.Text:
		if key {
			return "VARCHAR(255)"
		}
		return "LONGTEXT"
	case sink.Int32:
		return "INT"
	case sink.Int64:
		return "BIGINT"
	case sink.Float64:
		return "DOUBLE"
	case sink.Bool:
		return "BOOLEAN"
	case sink.Timestamp:
		return "DATETIME(6)"
	case sink.Bytes:
		if key {
			return "VARBINARY(255)"
		}
		return "LONGBLOB"
	}
	panic(fmt.Sprintf("mysql: no SQL type for column type %v", t)) // Validate refused it
}

func (s *Sink) migrations(coll string) []migration {
	cfg := s.cfg
	a := cfg.Aggregates
	c := a.Columns
	opts := tableOptions(coll)
	out := []migration{{object: "progress:" + cfg.ProgressTable, steps: [][]string{{
		"CREATE TABLE IF NOT EXISTS " + quote(cfg.ProgressTable) + " (`topic` VARCHAR(255) NOT NULL, `partition` INT NOT NULL, " +
			"`closed_through` DATETIME(6) NULL, `empty` BOOLEAN NOT NULL DEFAULT FALSE, `updated_at` DATETIME(6) NOT NULL, " +
			"PRIMARY KEY (`topic`, `partition`))" + opts,
	}}}, {object: "locks:" + cfg.LocksTable, steps: [][]string{{
		"CREATE TABLE IF NOT EXISTS " + quote(cfg.LocksTable) + " (`name` VARCHAR(255) NOT NULL PRIMARY KEY)" + opts,
	}}}}

	var attrs strings.Builder
	for _, at := range a.Attributes {
		fmt.Fprintf(&attrs, "%s LONGTEXT NULL, ", quote(at))
	}
	out = append(out, migration{object: "aggregates:" + a.Table, steps: [][]string{{
		"CREATE TABLE IF NOT EXISTS " + quote(cfg.PartialsTable) + " (`window_start` DATETIME(6) NOT NULL, `topic` VARCHAR(255) NOT NULL, " +
			"`partition` INT NOT NULL, `window_end` DATETIME(6) NOT NULL, `keys` INT NOT NULL, `entries` LONGBLOB NOT NULL, " +
			"`written_at` DATETIME(6) NOT NULL, PRIMARY KEY (`window_start`, `topic`, `partition`), KEY `window_end` (`window_end`))" + opts,
		"CREATE TABLE IF NOT EXISTS " + quote(cfg.foldedTable()) + " (`window_start` DATETIME(6) NOT NULL PRIMARY KEY, " +
			"`window_end` DATETIME(6) NOT NULL, `keys` INT NOT NULL, `entries` LONGBLOB NOT NULL, `folded_at` DATETIME(6) NOT NULL, " +
			"KEY `folded_at` (`folded_at`))" + opts,
		"CREATE TABLE IF NOT EXISTS " + quote(cfg.topicsTable()) + " (`topic` VARCHAR(255) NOT NULL PRIMARY KEY, `since` DATETIME(6) NOT NULL)" + opts,
		fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (%s DATETIME(6) NOT NULL, %s DATETIME(6) NOT NULL, %s VARCHAR(255) NOT NULL, "+
			"%s VARCHAR(255) NOT NULL, %s%s BIGINT NOT NULL, %s DOUBLE NOT NULL, %s DOUBLE NOT NULL, %s DOUBLE NOT NULL, "+
			"%s DOUBLE NOT NULL, %s DATETIME(6) NOT NULL, PRIMARY KEY (%s, %s, %s))%s",
			quote(a.Table), quote(c.WindowStart), quote(c.WindowEnd), quote(c.Dimension), quote(c.DimensionID),
			attrs.String(), quote(c.Count), quote(c.Mean), quote(c.Quantile), quote(c.Max), quote(c.Min), quote(c.ComputedAt),
			quote(c.WindowStart), quote(c.Dimension), quote(c.DimensionID), opts),
	}}})

	for _, st := range cfg.States {
		m := migration{object: "state:" + st.Table}
		if specs.Typed(st) {
			var cols, keys []string
			for _, k := range st.Key {
				cols = append(cols, quote(k.Name)+" "+sqlType(k.Type, true)+" NOT NULL")
				keys = append(keys, quote(k.Name))
			}
			cols = append(cols, quote(st.ObservedAt.Name)+" DATETIME(6) NOT NULL")
			for _, v := range st.Values {
				cols = append(cols, quote(v.Name)+" "+sqlType(v.Type, false)+" NULL")
			}
			if st.UpdatedAt != "" {
				cols = append(cols, quote(st.UpdatedAt)+" DATETIME(6) NULL")
			}
			m.steps = [][]string{{fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (%s, PRIMARY KEY (%s))%s",
				quote(st.Table), strings.Join(cols, ", "), strings.Join(keys, ", "), opts)}}
		}
		out = append(out, m)
	}
	return out
}

// Migrate creates or upgrades the sink's tables. It is idempotent and safe to run from
// several processes at once: migrations of a database run one at a time under a named
// server lock, every statement can run again, and a version per object set is recorded in
// streamledger_migrations. An attribute added to the spec later becomes a column of the
// merged table. State tables are created only when their spec has column types. A
// connection without a default database (a DSN that names none) is refused with an error
// wrapping [sink.ErrConfig].
func (s *Sink) Migrate(ctx context.Context) error {
	coll, err := collation(ctx, s.db)
	if err != nil {
		return fmt.Errorf("mysql: migrate: collation: %w", err)
	}
	if err := migrate(ctx, s.db, s.migrations(coll)); err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, "INSERT INTO "+quote(s.cfg.LocksTable)+" (`name`) VALUES (?) ON DUPLICATE KEY UPDATE `name` = `name`",
		s.cfg.Aggregates.Table); err != nil {
		return fmt.Errorf("mysql: migrate: lock row: %w", err)
	}
	if err := s.addAttributes(ctx); err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, s.viewDDL()); err != nil {
		return fmt.Errorf("mysql: migrate: view %s: %w", quote(s.cfg.statusView()), err)
	}
	return nil
}

// viewDDL creates or replaces the readiness view, for dashboards: the merged table plus
// complete_through, the minimum closed_through over the partitions that hold windows back
// (registered partitions of the contributing topics, but those marked empty that have closed
// nothing; NULL when one of them has closed nothing, the largest DATETIME when there is
// none), and complete = window_end <= complete_through. The sink's own reads compute the
// same from the tables in one statement.
func (s *Sink) viewDDL() string {
	a := s.cfg.Aggregates
	c := a.Columns
	cols := []string{c.WindowStart, c.WindowEnd, c.Dimension, c.DimensionID, c.Count, c.Mean, c.Quantile, c.Max, c.Min, c.ComputedAt}
	cols = append(cols, a.Attributes...)
	sel := make([]string, len(cols))
	for i, col := range cols {
		sel[i] = "a." + quote(col)
	}
	return fmt.Sprintf("CREATE OR REPLACE VIEW %s AS SELECT %s, r.`complete_through`, "+
		"COALESCE(a.%s <= r.`complete_through`, FALSE) AS `complete` FROM %s AS a CROSS JOIN "+
		"(SELECT CASE WHEN SUM(pr.`closed_through` IS NULL) > 0 THEN NULL WHEN COUNT(*) = 0 THEN CAST('9999-12-31 23:59:59.999999' AS DATETIME(6)) "+
		"ELSE MIN(pr.`closed_through`) END AS `complete_through` FROM %s AS pr JOIN %s AS t ON t.`topic` = pr.`topic` "+
		"WHERE NOT (pr.`empty` AND pr.`closed_through` IS NULL)) AS r",
		quote(s.cfg.statusView()), strings.Join(sel, ", "), quote(c.WindowEnd), quote(a.Table),
		quote(s.cfg.ProgressTable), quote(s.cfg.topicsTable()))
}

// addAttributes adds the attribute columns the merged table lacks (ADD COLUMN IF NOT EXISTS
// is MariaDB's only).
func (s *Sink) addAttributes(ctx context.Context) error {
	a := s.cfg.Aggregates
	if len(a.Attributes) == 0 {
		return nil
	}
	rows, err := s.db.QueryContext(ctx, "SELECT `COLUMN_NAME` FROM information_schema.`COLUMNS` WHERE `TABLE_SCHEMA` = DATABASE() AND `TABLE_NAME` = ?", a.Table)
	if err != nil {
		return fmt.Errorf("mysql: migrate: columns of %s: %w", quote(a.Table), err)
	}
	have := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return fmt.Errorf("mysql: migrate: columns of %s: %w", quote(a.Table), err)
		}
		have[name] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("mysql: migrate: columns of %s: %w", quote(a.Table), err)
	}
	for _, at := range a.Attributes {
		if have[at] {
			continue
		}
		if _, err := s.db.ExecContext(ctx, fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s LONGTEXT NULL", quote(a.Table), quote(at))); err != nil &&
			serverCode(err) != errDupFieldName {
			return fmt.Errorf("mysql: migrate: add attribute %q: %w", at, err)
		}
	}
	return nil
}

// migrationStatements returns the DDL of every migration, for review.
func (s *Sink) migrationStatements() []string {
	var out []string
	for _, m := range s.migrations(binaryCollations[0]) {
		for _, st := range m.steps {
			out = append(out, st...)
		}
	}
	return append(out, s.viewDDL())
}
