package postgres

import (
	"fmt"
	"strings"

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

// upsert is one generated INSERT ... ON CONFLICT, in every form the strategies send. Values
// only ever travel as parameters; names are quoted identifiers.
type upsert struct {
	cols    []string // column names, unquoted, in parameter order
	types   []string // SQL type of each column, for unnest; nil until known
	tmp     string   // quoted name of the temporary table of StrategyCopy
	tmpName string   // its unquoted name

	table    string // quoted, schema-qualified
	conflict string // ON CONFLICT (...) DO UPDATE SET ... [WHERE ...]

	values     string // INSERT ... VALUES ($1, ...) ON CONFLICT ...
	unnest     string // INSERT ... SELECT * FROM unnest($1::t[], ...) ON CONFLICT ...; "" until types are known
	createTemp string // CREATE TEMP TABLE ... ON COMMIT DROP AS SELECT ... WITH NO DATA
	fromTemp   string // INSERT ... SELECT ... FROM tmp ON CONFLICT ...
}

// newUpsert builds the statements for table (in schema) with columns cols, conflict target
// key, and the given SET assignments (already quoted SQL) and optional WHERE guard.
func newUpsert(schema, table string, cols, types, key, set []string, where string) *upsert {
	u := &upsert{cols: cols, table: ident(schema, table)}
	u.conflict = fmt.Sprintf("ON CONFLICT (%s) DO UPDATE SET %s", quoteAll("", key), strings.Join(set, ", "))
	if where != "" {
		u.conflict += " WHERE " + where
	}
	colList := quoteAll("", cols)
	ph := make([]string, len(cols))
	for i := range cols {
		ph[i] = fmt.Sprintf("$%d", i+1)
	}
	u.values = fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s) %s", u.table, colList, strings.Join(ph, ", "), u.conflict)
	tmpName := "streamledger_tmp_" + table
	if len(tmpName) > 63 {
		tmpName = tmpName[:63]
	}
	u.tmpName = tmpName
	u.tmp = ident(tmpName)
	u.createTemp = fmt.Sprintf("CREATE TEMP TABLE %s ON COMMIT DROP AS SELECT %s FROM %s WITH NO DATA", u.tmp, colList, u.table)
	u.fromTemp = fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s %s", u.table, colList, colList, u.tmp, u.conflict)
	if types != nil {
		u.setTypes(types)
	}
	return u
}

// setTypes records the column types and builds the unnest form.
func (u *upsert) setTypes(types []string) {
	u.types = types
	arrays := make([]string, len(u.cols))
	for i, t := range types {
		arrays[i] = fmt.Sprintf("$%d::%s[]", i+1, t)
	}
	u.unnest = fmt.Sprintf("INSERT INTO %s (%s) SELECT * FROM unnest(%s) %s",
		u.table, quoteAll("", u.cols), strings.Join(arrays, ", "), u.conflict)
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
