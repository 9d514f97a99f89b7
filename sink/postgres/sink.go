package postgres

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamledger/streamledger/internal/horizon"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/fold"
	"github.com/streamledger/streamledger/sink/internal/lockorder"
	"github.com/streamledger/streamledger/sink/internal/specs"
)

// Sink is the Postgres implementation of [sink.Sink], [sink.Reader],
// [sink.GatedWindowWriter] and [sink.TableDescriber]. It is safe for concurrent use, also by
// several processes on the same tables.
type Sink struct {
	pool   *pgxpool.Pool
	cfg    Config
	pruner *fold.Pruner
	codec  *fold.Codec
	// strategy moves batches of state rows; the zero value, strategyCopy, in every Sink.
	strategy strategy

	// closeLock is the key of the advisory lock that serializes the close writes of the
	// aggregates table: FNV-1a of the schema and the table's name.
	closeLock int64

	merged       *upsert
	partialsPut  string
	partialsDel  string
	foldedPut    string
	progressPut  string
	topicsPut    string
	prune        string
	readTopics   string
	readProgress string
	readPartials string
	readFolded   string
	readFinal    string

	progressOf    string
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
	mu   sync.Mutex // guards u's column types, discovered for strategyUnnest
}

// New returns a sink writing through pool with cfg. It does not touch the database; call
// [Sink.Migrate] to create the tables. The pool stays the caller's to close.
func New(pool *pgxpool.Pool, cfg Config) (*Sink, error) {
	if pool == nil {
		return nil, fmt.Errorf("%w: postgres.New: the pool is nil, want a *pgxpool.Pool", sink.ErrConfig)
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
	s := &Sink{pool: pool, cfg: cfg, pruner: &fold.Pruner{Horizon: h}, codec: codec, states: make(map[string]*stateTable, len(cfg.States))}
	s.closeLock = int64(lockorder.NewFNV().String("streamledger close").Byte(0).String(cfg.Schema).Byte(0).String(cfg.Aggregates.Table))
	s.buildAggregateSQL()
	for _, st := range cfg.States {
		s.states[st.Table] = s.newStateTable(st)
	}
	return s, nil
}

// Names of the tables beside the merged one (see the package documentation).
func (c Config) foldedTable() string { return c.Aggregates.Table + "_folded" }
func (c Config) topicsTable() string { return c.Aggregates.Table + "_topics" }

func (s *Sink) buildAggregateSQL() {
	cfg := s.cfg
	a := cfg.Aggregates
	c := a.Columns
	schema := cfg.Schema
	merged := ident(schema, a.Table)
	partials := ident(schema, cfg.PartialsTable)
	folded := ident(schema, cfg.foldedTable())
	topics := ident(schema, cfg.topicsTable())
	prog := ident(schema, cfg.ProgressTable)

	// Merged rows: computed whole by the fold, so every column is replaced; attributes
	// COALESCE(new, stored).
	mcols := specs.Columns(a)
	mvary := mcols[:len(mcols)-1] // computed_at is the same for the whole call
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

	s.partialsPut = fmt.Sprintf(`INSERT INTO %s ("window_start", "topic", "partition", "window_end", "keys", "entries", "written_at") `+
		`SELECT *, $7::timestamptz FROM unnest($1::timestamptz[], $2::text[], $3::int4[], $4::timestamptz[], $5::int4[], $6::bytea[]) `+
		`ON CONFLICT ("window_start", "topic", "partition") DO UPDATE SET %s`,
		partials, strings.Join(replace("window_end", "keys", "entries", "written_at"), ", "))
	s.partialsDel = fmt.Sprintf(`DELETE FROM %s WHERE "window_start" = ANY($1::timestamptz[])`, partials)
	s.foldedPut = fmt.Sprintf(`INSERT INTO %s ("window_start", "window_end", "keys", "entries", "folded_at") `+
		`SELECT *, $5::timestamptz FROM unnest($1::timestamptz[], $2::timestamptz[], $3::int4[], $4::bytea[]) `+
		`ON CONFLICT ("window_start") DO UPDATE SET %s`,
		folded, strings.Join(replace("window_end", "keys", "entries", "folded_at"), ", "))
	// The plan computed each changed row under the lock; GREATEST keeps progress from
	// going back all the same. Rows go in source order, the order every writer uses.
	s.progressPut = fmt.Sprintf(`INSERT INTO %s ("topic", "partition", "closed_through", "empty", "updated_at") `+
		`SELECT *, $5::timestamptz FROM unnest($1::text[], $2::int4[], $3::timestamptz[], $4::bool[]) `+
		`ON CONFLICT ("topic", "partition") DO UPDATE SET "closed_through" = GREATEST(%s."closed_through", EXCLUDED."closed_through"), `+
		`"empty" = EXCLUDED."empty", "updated_at" = EXCLUDED."updated_at"`, prog, ident(cfg.ProgressTable))
	s.topicsPut = fmt.Sprintf(`INSERT INTO %s ("topic", "since") SELECT unnest($1::text[]), $2::timestamptz ON CONFLICT ("topic") DO NOTHING`, topics)
	s.prune = fmt.Sprintf(`DELETE FROM %s WHERE "window_start" IN (SELECT "window_start" FROM %s WHERE "folded_at" < $1::timestamptz `+
		`ORDER BY "folded_at" LIMIT %d)`, folded, folded, fold.PruneLimit)

	// Reads of a close, each a statement of its own after the lock.
	s.readTopics = fmt.Sprintf(`SELECT "topic" FROM %s`, topics)
	s.readProgress = fmt.Sprintf(`SELECT "topic", "partition", "closed_through", "empty" FROM %s `+
		`WHERE "topic" = ANY($1::text[]) OR "topic" IN (SELECT "topic" FROM %s)`, prog, topics)
	s.readPartials = fmt.Sprintf(`SELECT "window_start", "window_end", "topic", "partition", "entries" FROM %s `+
		`WHERE "window_end" <= $1::timestamptz OR ("window_start", "topic", "partition") IN `+
		`(SELECT * FROM unnest($2::timestamptz[], $3::text[], $4::int4[]))`, partials)
	s.readFolded = fmt.Sprintf(`SELECT "window_start", "window_end", "entries" FROM %s `+
		`WHERE "window_start" = ANY($1::timestamptz[]) OR "window_start" IN (SELECT "window_start" FROM %s WHERE "window_end" <= $2::timestamptz)`,
		folded, partials)
	s.readFinal = fmt.Sprintf(`SELECT u.w FROM unnest($1::timestamptz[]) AS u(w) WHERE EXISTS (SELECT 1 FROM %s AS m WHERE m.%s = u.w)`,
		merged, ident(c.WindowStart))

	s.progressOf = fmt.Sprintf(`SELECT p."topic", p."partition", p."closed_through" FROM %s AS p `+
		`JOIN unnest($1::text[], $2::int4[]) AS k(t, n) ON p."topic" = k.t AND p."partition" = k.n WHERE p."closed_through" IS NOT NULL`, prog)
	s.completeThru = fmt.Sprintf(`SELECT min("closed_through"), bool_or("closed_through" IS NULL), count(*) FROM %s `+
		`WHERE "topic" = ANY($1::text[]) AND NOT ("empty" AND "closed_through" IS NULL)`, prog)

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

func (s *Sink) newStateTable(spec sink.StateSpec) *stateTable {
	cols := specs.StateColumns(spec)
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
// review and for tests: the close writes and reads, the upserts of the state tables in each
// strategy's form, the readers and the migrations. The unnest form of a state table appears
// once its column types are known (after its first write with strategyUnnest).
func (s *Sink) Statements() []string {
	out := s.merged.statements()
	out = append(out, s.partialsPut, s.partialsDel, s.foldedPut, s.progressPut, s.topicsPut, s.prune, closeLockSQL,
		s.readTopics, s.readProgress, s.readPartials, s.readFolded, s.readFinal,
		s.progressOf, s.readAgg, s.readAggWindow, s.completeThru)
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
