package mysql

import (
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/streamledger/streamledger/internal/horizon"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/fold"
	"github.com/streamledger/streamledger/sink/internal/specs"
)

// Sink is the MySQL and MariaDB implementation of [sink.Sink], [sink.Reader],
// [sink.GatedWindowWriter] and [sink.TableDescriber]. It is safe for concurrent use, also by
// several processes on the same tables.
type Sink struct {
	db     *sql.DB
	cfg    Config
	pruner *fold.Pruner
	codec  *fold.Codec

	lockRead, lockAdd string

	merged, partialsPut, foldedPut, progressPut, topicsPut *rowsStmt

	partialsDel  string // + IN list
	prune        string
	readTopics   string
	readProgress string // + IN list + suffix readProgressEnd
	readPartials string // + conditions
	readFolded   string // + IN list + readFoldedEnd
	readFinal    string // + IN list + ")"

	progressOf   string // + conditions
	completeThru string // + IN list + completeEnd
	readAgg      string
	readAggs     string

	states map[string]*stateTable
}

const (
	readProgressEnd = ") OR `topic` IN (SELECT `topic` FROM %s)"
	completeEnd     = ") AND NOT (`empty` AND `closed_through` IS NULL)"
)

type stateTable struct {
	spec   sink.StateSpec
	upsert *rowsStmt
	read   string
}

// New returns a sink writing through db with cfg. It does not touch the database; call
// [Sink.Migrate] to create the tables. db stays the caller's to close, and so do its pool
// settings (SetMaxOpenConns and the like): concurrent calls use a connection each. Its DSN
// needs no particular parameters: times travel as UTC text and are read back whatever
// parseTime and loc say.
func New(db *sql.DB, cfg Config) (*Sink, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: mysql.New: the db is nil, want a *sql.DB", sink.ErrConfig)
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	h, err := horizon.Resolve(cfg.Horizon, cfg.SourceRetention, "Config.Horizon", "Config.SourceRetention")
	if err != nil {
		return nil, err
	}
	codec, err := fold.NewCodec()
	if err != nil {
		return nil, err
	}
	s := &Sink{db: db, cfg: cfg, pruner: &fold.Pruner{Horizon: h}, codec: codec, states: make(map[string]*stateTable, len(cfg.States))}
	s.buildCloseSQL()
	s.buildReadSQL()
	for _, st := range cfg.States {
		s.states[st.Table] = newStateTable(st)
	}
	return s, nil
}

func (s *Sink) buildCloseSQL() {
	cfg := s.cfg
	a := cfg.Aggregates
	c := a.Columns
	partials, folded, topics := quote(cfg.PartialsTable), quote(cfg.foldedTable()), quote(cfg.topicsTable())

	s.lockRead = "SELECT `name` FROM " + quote(cfg.LocksTable) + " WHERE `name` = ? FOR UPDATE"
	s.lockAdd = "INSERT INTO " + quote(cfg.LocksTable) + " (`name`) VALUES (?) ON DUPLICATE KEY UPDATE `name` = `name`"

	// Merged rows are computed whole by the fold, so every column is replaced; attributes
	// COALESCE(new, stored).
	set := replace(c.WindowEnd)
	set = append(set, coalesce(a.Attributes...)...)
	set = append(set, replace(c.Count, c.Mean, c.Quantile, c.Max, c.Min, c.ComputedAt)...)
	s.merged = newRowsStmt(a.Table, specs.Columns(a), "ON DUPLICATE KEY UPDATE "+strings.Join(set, ", "))
	s.partialsPut = newRowsStmt(cfg.PartialsTable, []string{"window_start", "topic", "partition", "window_end", "keys", "entries", "written_at"},
		"ON DUPLICATE KEY UPDATE "+strings.Join(replace("window_end", "keys", "entries", "written_at"), ", "))
	s.foldedPut = newRowsStmt(cfg.foldedTable(), []string{"window_start", "window_end", "keys", "entries", "folded_at"},
		"ON DUPLICATE KEY UPDATE "+strings.Join(replace("window_end", "keys", "entries", "folded_at"), ", "))
	// The plan computed each changed row under the lock; the CASE keeps progress from going
	// back all the same (GREATEST is NULL when either side is).
	s.progressPut = newRowsStmt(cfg.ProgressTable, []string{"topic", "partition", "closed_through", "empty", "updated_at"},
		"ON DUPLICATE KEY UPDATE `closed_through` = CASE WHEN `closed_through` IS NULL OR VALUES(`closed_through`) > `closed_through` "+
			"THEN VALUES(`closed_through`) ELSE `closed_through` END, `empty` = VALUES(`empty`), `updated_at` = VALUES(`updated_at`)")
	s.topicsPut = newRowsStmt(cfg.topicsTable(), []string{"topic", "since"}, "ON DUPLICATE KEY UPDATE `topic` = `topic`")

	s.partialsDel = "DELETE FROM " + partials + " WHERE `window_start` IN ("
	s.prune = fmt.Sprintf("DELETE FROM %s WHERE `folded_at` < ? ORDER BY `folded_at` LIMIT %d", folded, fold.PruneLimit)
	s.readTopics = "SELECT `topic` FROM " + topics
	s.readProgress = "SELECT `topic`, `partition`, `closed_through`, `empty` FROM " + quote(cfg.ProgressTable) + " WHERE `topic` IN ("
	s.readPartials = "SELECT `window_start`, `window_end`, `topic`, `partition`, `entries` FROM " + partials + " WHERE "
	s.readFolded = "SELECT `window_start`, `window_end`, `entries` FROM " + folded + " WHERE "
	s.readFinal = fmt.Sprintf("SELECT DISTINCT %s FROM %s WHERE %s IN (", quote(c.WindowStart), quote(a.Table), quote(c.WindowStart))
}

func (s *Sink) buildReadSQL() {
	cfg := s.cfg
	a := cfg.Aggregates
	c := a.Columns
	prog := quote(cfg.ProgressTable)
	s.progressOf = "SELECT `topic`, `partition`, `closed_through` FROM " + prog + " WHERE `closed_through` IS NOT NULL AND ("
	s.completeThru = "SELECT MIN(`closed_through`), COALESCE(SUM(`closed_through` IS NULL), 0), COUNT(*) FROM " + prog + " WHERE `topic` IN ("
	cols := []string{c.WindowStart, c.WindowEnd, c.Dimension, c.DimensionID, c.Count, c.Mean, c.Quantile, c.Max, c.Min, c.ComputedAt}
	cols = append(cols, a.Attributes...)
	m := make([]string, len(cols))
	for i, col := range cols {
		m[i] = "m." + quote(col)
	}
	// The readiness of the rows comes with them, from the same statement: the partitions
	// that hold windows back (registered partitions of the contributing topics, but those
	// marked empty that have closed nothing), how many of them have closed nothing, and the
	// least closed_through.
	sel := fmt.Sprintf("SELECT %s, r.`open`, r.`holding`, r.`through` FROM %s AS m CROSS JOIN "+
		"(SELECT COALESCE(SUM(pr.`closed_through` IS NULL), 0) AS `open`, COUNT(*) AS `holding`, MIN(pr.`closed_through`) AS `through` "+
		"FROM %s AS pr JOIN %s AS t ON t.`topic` = pr.`topic` WHERE NOT (pr.`empty` AND pr.`closed_through` IS NULL)) AS r ",
		strings.Join(m, ", "), quote(a.Table), prog, quote(cfg.topicsTable()))
	s.readAgg = sel + fmt.Sprintf("WHERE m.%s = ? AND m.%s = ? AND m.%s = ?", quote(c.WindowStart), quote(c.Dimension), quote(c.DimensionID))
	s.readAggs = sel + fmt.Sprintf("WHERE m.%s = ? ORDER BY m.%s, m.%s", quote(c.WindowStart), quote(c.Dimension), quote(c.DimensionID))
}

// newStateTable builds the upsert of a state table: a stored row's columns are replaced only
// when the new row's observed_at is not older. MySQL assigns left to right and each
// assignment sees the columns assigned before it, so observed_at, which every condition
// reads, is assigned last: every condition compares with the stored row's time.
func newStateTable(spec sink.StateSpec) *stateTable {
	obs := quote(spec.ObservedAt.Name)
	newer := fmt.Sprintf("VALUES(%s) >= %s", obs, obs)
	var set []string
	for _, c := range spec.Values {
		set = append(set, fmt.Sprintf("%s = IF(%s, VALUES(%s), %s)", quote(c.Name), newer, quote(c.Name), quote(c.Name)))
	}
	if spec.UpdatedAt != "" {
		set = append(set, fmt.Sprintf("%s = IF(%s, VALUES(%s), %s)", quote(spec.UpdatedAt), newer, quote(spec.UpdatedAt), quote(spec.UpdatedAt)))
	}
	set = append(set, fmt.Sprintf("%s = IF(%s, VALUES(%s), %s)", obs, newer, obs, obs))
	st := &stateTable{spec: spec, upsert: newRowsStmt(spec.Table, specs.StateColumns(spec), "ON DUPLICATE KEY UPDATE "+strings.Join(set, ", "))}
	vals := []string{spec.ObservedAt.Name}
	for _, c := range spec.Values {
		vals = append(vals, c.Name)
	}
	where := make([]string, len(spec.Key))
	for i, k := range spec.Key {
		where[i] = quote(k.Name) + " = ?"
	}
	st.read = fmt.Sprintf("SELECT %s FROM %s WHERE %s", quoteAll(vals), quote(spec.Table), strings.Join(where, " AND "))
	return st
}

// Statements returns the SQL statements the sink generates for its configuration, for
// review and for tests: the close writes and reads (multi-row statements shown for two rows,
// IN lists for one value), the state upserts and reads, the readers and the migrations'
// DDL.
func (s *Sink) Statements() []string {
	out := []string{s.lockRead, s.lockAdd, s.merged.sample(), s.partialsPut.sample(), s.foldedPut.sample(),
		s.progressPut.sample(), s.topicsPut.sample(), s.partialsDel + "?)", s.prune, s.readTopics,
		s.progressQuery(1), s.partialsQuery(true, 1), s.foldedQuery(1, true), s.readFinal + "?)",
		s.progressOf + "(`topic` = ? AND `partition` = ?))", s.completeThru + "?" + completeEnd, s.readAgg, s.readAggs}
	names := make([]string, 0, len(s.states))
	for n := range s.states {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		out = append(out, s.states[n].upsert.sample(), s.states[n].read)
	}
	return append(out, s.migrationStatements()...)
}

// Tables implements [sink.TableDescriber]: it returns the specs of the tables the sink
// writes, defaults filled in, so that a consumer builds its windows with the aggregate
// spec's exact limit and checks its state rows and attributes before they reach a write.
func (s *Sink) Tables() (sink.AggregateSpec, []sink.StateSpec) {
	return s.cfg.Aggregates, slices.Clone(s.cfg.States)
}

var (
	_ sink.Sink              = (*Sink)(nil)
	_ sink.Reader            = (*Sink)(nil)
	_ sink.GatedWindowWriter = (*Sink)(nil)
	_ sink.TableDescriber    = (*Sink)(nil)
)
