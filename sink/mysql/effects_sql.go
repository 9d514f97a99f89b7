package mysql

import (
	"fmt"
	"strings"
)

// markerChunk bounds the markers of one statement: 4 placeholders each keeps an INSERT far
// within MySQL's 65,535 placeholders, and a statement's packet small.
const markerChunk = 4096

// values returns n rows of width placeholders each, as in a multi-row VALUES list:
// "(?, ?), (?, ?)".
func values(n, width int) string {
	row := "(" + strings.Repeat("?, ", width-1) + "?)"
	var b strings.Builder
	b.Grow(n * (len(row) + 2))
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
	}
	return b.String()
}

// list returns n comma-separated placeholders, as in an IN list.
func list(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

func (e *Effects) migrations() []migration {
	return []migration{{object: "markers:" + e.cfg.Table, steps: [][]string{{
		fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (`op_id` VARBINARY(%d) NOT NULL PRIMARY KEY, "+
			"`payload_hash` BINARY(32) NOT NULL, `token` BINARY(16) NOT NULL, `created_at` DATETIME(6) NOT NULL, "+
			"INDEX `created_at` (`created_at`)) ENGINE=InnoDB", e.table, MaxIDBytes),
	}}}}
}

// insertSQL inserts n markers (op_id, payload_hash, token, created_at). A duplicate ID
// changes nothing but is locked, as a row the statement updated: the read that follows sees
// the committed marker, and a concurrent insert of the same ID waits for this transaction.
func (e *Effects) insertSQL(n int) string {
	return "INSERT INTO " + e.table + " (`op_id`, `payload_hash`, `token`, `created_at`) VALUES " + values(n, 4) +
		" ON DUPLICATE KEY UPDATE `op_id` = `op_id`"
}

// lookupSQL reads n markers, with the token that tells this call's own. It is a plain read,
// not a locking one: the insert before it locked every one of the markers (those it inserted
// and the duplicates, whose writers committed), so at READ COMMITTED it sees them as
// committed or as this transaction's own. A locking read could scan past the markers asked
// for (on a small table the optimizer scans it whole) and wait for the uncommitted markers of
// concurrent batches, which deadlocks two batches with disjoint IDs.
func (e *Effects) lookupSQL(n int) string {
	return "SELECT `op_id`, `payload_hash`, `token` FROM " + e.table + " WHERE `op_id` IN (" + list(n) + ")"
}

// mineSQL finds one marker by ID and token.
func (e *Effects) mineSQL() string {
	return "SELECT 1 FROM " + e.table + " WHERE `op_id` = ? AND `token` = ?"
}

// forgetSQL deletes one marker of this call, by ID and token: a point lookup on the primary
// key, so that it locks no other marker (a DELETE over a list may scan the table and wait
// for the uncommitted markers of concurrent batches).
func (e *Effects) forgetSQL() string {
	return "DELETE FROM " + e.table + " WHERE `op_id` = ? AND `token` = ?"
}

// pruneSQL deletes at most a given number of markers created before a time.
func (e *Effects) pruneSQL() string {
	return "DELETE FROM " + e.table + " WHERE `created_at` < ? ORDER BY `created_at` LIMIT ?"
}
