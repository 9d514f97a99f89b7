package postgres

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamledger/streamledger/sink"
)

// Sink is the Postgres implementation of [sink.Sink] and [sink.Reader]. It is safe for
// concurrent use, also by several processes on the same tables.
type Sink struct {
	pool *pgxpool.Pool
	cfg  Config

	lockClass int32 // first key of every advisory lock: the aggregates table's identity

	partials     *upsert
	merged       *upsert
	mergedUpdate string
	progress     string
	lock         string
	others       string

	readProgress  string
	readAgg       string
	readAggWindow string
	completeThru  string
	view          string // quoted name of the readiness view

	states map[string]*stateTable
}

type stateTable struct {
	spec sink.StateSpec
	u    *upsert
	read string
	mu   sync.Mutex // guards u's column types, discovered for StrategyUnnest
}

// New returns a sink writing through pool with cfg. It does not touch the database; call
// [Sink.Migrate] to create the tables. The pool stays the caller's to close.
func New(pool *pgxpool.Pool, cfg Config) (*Sink, error) {
	if pool == nil {
		return nil, fmt.Errorf("%w: nil pool", sink.ErrInvalid)
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Sink{pool: pool, cfg: cfg, states: make(map[string]*stateTable, len(cfg.States))}
	h := fnv.New32a()
	_, _ = h.Write([]byte(cfg.Schema + "\x00" + cfg.Aggregates.Table))
	s.lockClass = int32(h.Sum32())
	s.buildAggregateSQL()
	for _, st := range cfg.States {
		s.states[st.Table] = s.newStateTable(st)
	}
	return s, nil
}

func (s *Sink) buildAggregateSQL() {
	cfg := s.cfg
	a := cfg.Aggregates
	c := a.Columns
	schema := cfg.Schema

	// Partials: one row per (key, source partition); a rewrite replaces it. The source
	// partition and the write time are the same for the whole batch: scalar parameters.
	pvary := append([]string{"window_start", "dimension", "dimension_id", "window_end", "stats"}, a.Attributes...)
	ptypes := []string{"timestamptz", "text", "text", "timestamptz", "bytea"}
	for range a.Attributes {
		ptypes = append(ptypes, "text")
	}
	pset := append(replace("window_end", "stats"), coalesce(cfg.PartialsTable, a.Attributes...)...)
	pset = append(pset, replace("written_at")...)
	s.partials = newUpsert(schema, cfg.PartialsTable, pvary, ptypes,
		[]string{"topic", "partition", "written_at"}, []string{"text", "int4", "timestamptz"},
		[]string{"window_start", "dimension", "dimension_id", "topic", "partition"}, pset, "")

	// Merged rows: recomputed whole from the partials, so every column is replaced.
	mcols := a.ColumnNames()
	mvary := mcols[:len(mcols)-1] // computed_at is the same for the whole batch
	mtypes := []string{"timestamptz", "timestamptz", "text", "text"}
	for range a.Attributes {
		mtypes = append(mtypes, "text")
	}
	mtypes = append(mtypes, "int8", "float8", "float8", "float8", "float8")
	mset := replace(c.WindowEnd)
	mset = append(mset, coalesce(a.Table, a.Attributes...)...)
	mset = append(mset, replace(c.Count, c.Mean, c.Quantile, c.Max, c.Min, c.ComputedAt)...)
	s.merged = newUpsert(schema, a.Table, mvary, mtypes, []string{c.ComputedAt}, []string{"timestamptz"},
		[]string{c.WindowStart, c.Dimension, c.DimensionID}, mset, "")
	s.mergedUpdate = mergedUpdateSQL(schema, a, mvary, mtypes)

	prog := ident(schema, cfg.ProgressTable)
	s.progress = fmt.Sprintf(`INSERT INTO %s ("topic", "partition", "closed_through", "updated_at") VALUES ($1, $2, $3, $4) `+
		`ON CONFLICT ("topic", "partition") DO UPDATE SET "closed_through" = GREATEST(%s."closed_through", EXCLUDED."closed_through"), "updated_at" = EXCLUDED."updated_at"`,
		prog, ident(cfg.ProgressTable))
	// The locks are taken in the order of the array, which the caller sorts.
	s.lock = `SELECT count(pg_advisory_xact_lock($1::int4, b)) FROM unnest($2::int4[]) AS u(b)`

	// Every stored partial of the batch's keys, read after the locks, by the key's position
	// in the batch ($1 to $3, in key order). The batch's own are read only when $6 is true,
	// that is when some partial of the batch lacks an attribute and an older own partial may
	// have been overwritten: then COALESCE may have kept a stored value the writer does not
	// have. They come without their stats, which the writer has. $7 and $8, the batch's
	// first and last window start, bound the index range the join reads.
	s.others = fmt.Sprintf(`SELECT k.i, p."topic", p."partition", `+
		`CASE WHEN p."topic" = $4::text AND p."partition" = $5::int4 THEN NULL ELSE p."stats" END%s `+
		`FROM unnest($1::timestamptz[], $2::text[], $3::text[]) WITH ORDINALITY AS k(ws, d, di, i) `+
		`JOIN %s AS p ON p."window_start" = k.ws AND p."dimension" = k.d AND p."dimension_id" = k.di `+
		`WHERE p."window_start" BETWEEN $7::timestamptz AND $8::timestamptz AND ($6::bool OR p."topic" <> $4::text OR p."partition" <> $5::int4)`,
		prefixed(", ", quoteAll("p.", a.Attributes)), ident(schema, cfg.PartialsTable))

	s.readProgress = fmt.Sprintf(`SELECT p."topic", p."partition", p."closed_through" FROM %s AS p `+
		`JOIN unnest($1::text[], $2::int4[]) AS k(t, n) ON p."topic" = k.t AND p."partition" = k.n`, prog)
	s.completeThru = fmt.Sprintf(`SELECT min("closed_through"), count(*) FROM %s WHERE "topic" = ANY($1::text[])`, prog)

	s.view = ident(schema, a.Table+"_status")
	sel := fmt.Sprintf("SELECT %s, %s, %s, %s, %s, %s, %s, %s, %s, %s",
		ident(c.WindowStart), ident(c.WindowEnd), ident(c.Dimension), ident(c.DimensionID),
		ident(c.Count), ident(c.Mean), ident(c.Quantile), ident(c.Max), ident(c.Min), ident(c.ComputedAt))
	if len(a.Attributes) > 0 {
		sel += ", " + quoteAll("", a.Attributes)
	}
	sel += `, "complete" FROM ` + s.view
	s.readAgg = fmt.Sprintf("%s WHERE %s = $1 AND %s = $2 AND %s = $3", sel, ident(c.WindowStart), ident(c.Dimension), ident(c.DimensionID))
	s.readAggWindow = fmt.Sprintf("%s WHERE %s = $1 ORDER BY %s, %s", sel, ident(c.WindowStart), ident(c.Dimension), ident(c.DimensionID))
}

// mergedUpdateSQL returns UPDATE ... SET ... FROM unnest(...) for the merged table: the
// varying columns vary (key columns included) as arrays of types vtypes, computed_at after
// them, then the window range that bounds the rows the join reads. Every column is
// replaced; attributes are COALESCE(new, stored), as in the upsert.
func mergedUpdateSQL(schema string, a sink.AggregateSpec, vary, vtypes []string) string {
	c := a.Columns
	var set, as []string
	pos := make(map[string]int, len(vary))
	for i, col := range vary {
		pos[col] = i
		as = append(as, fmt.Sprintf("c%d", i))
		switch {
		case col == c.WindowStart || col == c.Dimension || col == c.DimensionID:
		case slices.Contains(a.Attributes, col):
			set = append(set, fmt.Sprintf("%s = COALESCE(u.c%d, t.%s)", ident(col), i, ident(col)))
		default:
			set = append(set, fmt.Sprintf("%s = u.c%d", ident(col), i))
		}
	}
	n := len(vary)
	set = append(set, fmt.Sprintf("%s = $%d::timestamptz", ident(c.ComputedAt), n+1))
	return fmt.Sprintf("UPDATE %s AS t SET %s FROM unnest(%s) AS u(%s) "+
		"WHERE t.%s = u.c%d AND t.%s = u.c%d AND t.%s = u.c%d AND t.%s BETWEEN $%d::timestamptz AND $%d::timestamptz",
		ident(schema, a.Table), strings.Join(set, ", "), placeholders(1, vtypes, "[]"), strings.Join(as, ", "),
		ident(c.WindowStart), pos[c.WindowStart], ident(c.Dimension), pos[c.Dimension], ident(c.DimensionID), pos[c.DimensionID],
		ident(c.WindowStart), n+2, n+3)
}

func (s *Sink) newStateTable(spec sink.StateSpec) *stateTable {
	cols := spec.ColumnNames()
	var set []string
	for _, c := range spec.Values {
		set = append(set, replace(c.Name)...)
	}
	set = append(set, replace(spec.ObservedAt.Name)...)
	if spec.UpdatedAt != "" {
		set = append(set, replace(spec.UpdatedAt)...)
	}
	keys := make([]string, len(spec.Key))
	for i, k := range spec.Key {
		keys[i] = k.Name
	}
	obs := ident(spec.ObservedAt.Name)
	guard := fmt.Sprintf("EXCLUDED.%s >= %s.%s", obs, ident(spec.Table), obs)
	var consts, ctypes []string
	if spec.UpdatedAt != "" {
		cols = cols[:len(cols)-1]
		consts, ctypes = []string{spec.UpdatedAt}, []string{"timestamptz"}
	}
	st := &stateTable{spec: spec, u: newUpsert(s.cfg.Schema, spec.Table, cols, nil, consts, ctypes, keys, set, guard)}
	vals := make([]string, 0, len(spec.Values)+1)
	vals = append(vals, spec.ObservedAt.Name)
	for _, c := range spec.Values {
		vals = append(vals, c.Name)
	}
	where := make([]string, len(keys))
	for i, k := range keys {
		where[i] = fmt.Sprintf("%s = $%d", ident(k), i+1)
	}
	st.read = fmt.Sprintf("SELECT %s FROM %s WHERE %s", quoteAll("", vals), ident(s.cfg.Schema, spec.Table), strings.Join(where, " AND "))
	return st
}

// Statements returns every SQL statement the sink generates for its configuration, for
// review and for tests: the upserts in each strategy's form, the lock, progress and read
// statements. The unnest form of a state table appears once its column types are known
// (after its first write with [StrategyUnnest]).
func (s *Sink) Statements() []string {
	out := s.partials.statements()
	out = append(out, s.merged.statements()...)
	out = append(out, s.mergedUpdate)
	out = append(out, s.progress, s.lock, s.others, s.readProgress, s.readAgg, s.readAggWindow, s.completeThru)
	names := make([]string, 0, len(s.states))
	for n := range s.states {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		st := s.states[n]
		st.mu.Lock()
		out = append(out, st.u.statements()...)
		st.mu.Unlock()
		out = append(out, st.read)
	}
	return append(out, s.migrationStatements()...)
}
