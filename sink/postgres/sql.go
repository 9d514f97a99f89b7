package postgres

import (
	"fmt"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
)

// ident quotes a possibly qualified name.
func ident(parts ...string) string { return pgx.Identifier(parts).Sanitize() }

// quoteAll quotes each name and joins them with ", ", each prefixed by prefix.
func quoteAll(prefix string, names []string) string {
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(prefix)
		b.WriteString(ident(n))
	}
	return b.String()
}

// placeholders returns "$from::types[0], $from+1::types[1], ..." (no casts if types is nil
// and n names the count), with suffix appended to each type.
func placeholders(from int, types []string, suffix string) string {
	out := make([]string, len(types))
	for i, t := range types {
		out[i] = fmt.Sprintf("$%d::%s%s", from+i, t, suffix)
	}
	return strings.Join(out, ", ")
}

// upsert is one generated INSERT ... ON CONFLICT, in the form of every strategy. Columns
// are varying (one value per row) or constant (one value for the whole batch, sent once as a
// scalar parameter after the varying ones). Values only ever travel as parameters; names are
// quoted identifiers.
type upsert struct {
	varying []string // varying column names, unquoted, in parameter order
	vtypes  []string // their SQL types, for unnest; nil until known
	consts  []string // constant column names
	ctypes  []string // their SQL types

	table    string         // quoted, schema-qualified
	ident    pgx.Identifier // the same name unquoted, as CopyFrom takes it
	cols     string         // quoted column list: varying, then constant
	conflict string         // ON CONFLICT (...) DO UPDATE SET ... [WHERE ...]
	tmpName  string         // unquoted name of the temporary table of strategyCopy

	values     string // INSERT ... VALUES ($1, ...) ON CONFLICT ...
	unnest     string // INSERT ... SELECT *, $k FROM unnest($1::t[], ...) ON CONFLICT ...; "" until types are known
	createTemp string // CREATE TEMP TABLE ... ON COMMIT DROP AS SELECT ... WITH NO DATA
	fromTemp   string // INSERT ... SELECT ..., $1 FROM tmp ON CONFLICT ...

	oidsMu sync.Mutex
	oids   []uint32 // the columns' type OIDs, varying then constant; nil until read
}

// newUpsert builds the statements for table (in schema), conflict target key, the given SET
// assignments (already quoted SQL) and optional WHERE guard.
func newUpsert(schema, table string, varying, vtypes, consts, ctypes, key, set []string, where string) *upsert {
	u := &upsert{varying: varying, consts: consts, ctypes: ctypes, table: ident(schema, table), ident: pgx.Identifier{schema, table}}
	u.conflict = fmt.Sprintf("ON CONFLICT (%s) DO UPDATE SET %s", quoteAll("", key), strings.Join(set, ", "))
	if where != "" {
		u.conflict += " WHERE " + where
	}
	u.cols = quoteAll("", append(append([]string(nil), varying...), consts...))
	ph := make([]string, len(varying)+len(consts))
	for i := range ph {
		ph[i] = fmt.Sprintf("$%d", i+1)
	}
	u.values = fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s) %s", u.table, u.cols, strings.Join(ph, ", "), u.conflict)
	u.tmpName = "streamledger_tmp_" + table
	if len(u.tmpName) > 63 {
		u.tmpName = u.tmpName[:63]
	}
	vcols := quoteAll("", varying)
	u.createTemp = fmt.Sprintf("CREATE TEMP TABLE %s ON COMMIT DROP AS SELECT %s FROM %s WITH NO DATA", ident(u.tmpName), vcols, u.table)
	u.fromTemp = fmt.Sprintf("INSERT INTO %s (%s) SELECT %s%s FROM %s %s", u.table, u.cols, vcols,
		prefixed(", ", placeholders(1, ctypes, "")), ident(u.tmpName), u.conflict)
	if vtypes != nil {
		u.setTypes(vtypes)
	}
	return u
}

// setTypes records the varying columns' types and builds the unnest form.
func (u *upsert) setTypes(vtypes []string) {
	u.vtypes = vtypes
	u.unnest = fmt.Sprintf("INSERT INTO %s (%s) SELECT *%s FROM unnest(%s) %s", u.table, u.cols,
		prefixed(", ", placeholders(len(vtypes)+1, u.ctypes, "")), placeholders(1, vtypes, "[]"), u.conflict)
}

// columns returns the column names of a row: varying, then constant, as COPY takes them.
func (u *upsert) columns() []string {
	return append(append(make([]string, 0, len(u.varying)+len(u.consts)), u.varying...), u.consts...)
}

// statements returns every statement of u that is known.
func (u *upsert) statements() []string {
	out := []string{u.values, u.createTemp, u.fromTemp}
	if u.unnest != "" {
		out = append(out, u.unnest)
	}
	return out
}

// replace returns "c = EXCLUDED.c" for each column: the replace assignment.
func replace(cols ...string) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = fmt.Sprintf("%s = EXCLUDED.%s", ident(c), ident(c))
	}
	return out
}

// coalesce returns "c = COALESCE(EXCLUDED.c, table.c)" for each column: a missing value
// keeps the stored one.
func coalesce(table string, cols ...string) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = fmt.Sprintf("%s = COALESCE(EXCLUDED.%s, %s.%s)", ident(c), ident(c), ident(table), ident(c))
	}
	return out
}

func prefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}
