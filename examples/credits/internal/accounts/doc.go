// Package accounts holds the credits example's business tables and the effect the effect
// sink applies for each credit, behind one interface ([Store]) on two databases: [Postgres]
// (sink/postgres Effects) and [MySQL] (sink/mysql Effects, MySQL 8 or MariaDB). Both keep the
// same tables, give the same results and are held to the same tests.
//
// # Tables
//
// On Postgres in the configured schema, on MySQL in the connection's database (with
// VARBINARY(255) ids, BIGINT AUTO_INCREMENT entry ids and DATETIME(6) times in UTC), created by
// [Store.Migrate]:
//
//	accounts        (account_id text PRIMARY KEY, balance bigint NOT NULL)
//	account_entries (entry_id bigserial PRIMARY KEY, op_id text NOT NULL,
//	                 account_id text NOT NULL, amount bigint NOT NULL,
//	                 applied_at timestamptz NOT NULL)
//
// account_entries is the per-account ledger: one row per credit applied. It has no unique
// constraint on op_id on purpose: the effect sink's marker is the only arbiter of "once", and
// an entries table that deduplicated on its own would hide a marker that failed to. So the
// number of entries of an operation id is the number of times it was applied, which the
// tests compare with 1 for every id. It has no foreign key to accounts either: an entry is
// only ever written by the statement that credits its account, joined to the accounts it
// updated, so a key check per entry (a lookup and a row lock each) would only repeat what the
// statement guarantees, at a cost per entry.
//
// # The effect
//
// [Postgres.Effect] is the effect of a batch of credits, run by the effect sink inside the
// markers' transaction on the credits whose markers it accepted ([Postgres.Credits]), as two
// statements sent together:
//
//	SELECT 1 FROM accounts WHERE account_id = ANY($accounts) ORDER BY account_id FOR UPDATE
//
//	WITH input AS (SELECT * FROM unnest($op_ids, $accounts, $amounts) WITH ORDINALITY
//	               AS t(op_id, account_id, amount, n)),
//	     totals AS (SELECT account_id, sum(amount) AS total FROM input GROUP BY account_id),
//	     credited AS (UPDATE accounts a SET balance = a.balance + t.total FROM totals t
//	                  WHERE a.account_id = t.account_id RETURNING a.account_id)
//	INSERT INTO account_entries (op_id, account_id, amount, applied_at)
//	SELECT i.op_id, i.account_id, i.amount, $applied_at
//	FROM input i JOIN credited c ON c.account_id = i.account_id ORDER BY i.n
//	RETURNING op_id
//
// The first locks the batch's accounts in one order, so that concurrent batches (two consumer
// groups, partitions that share accounts) wait for each other instead of deadlocking. The
// second credits each account once with the sum of its credits and writes one entry per
// credit, in batch order. A credit whose account does not exist writes no entry, and the
// effect reports it with [sink.ErrNoEffect], so that the sink removes its marker. Amounts are
// positive, so one UPDATE per account leaves the balance that the credits applied one by one
// would; a sum that overflows bigint fails the statement, and the sink then applies each
// credit alone: the one that overflows is refused ([Refused] makes it a [*RejectedError]:
// rolled back, no marker, and a dead letter rather than an outage).
//
// [MySQL.Effect] does the same in three statements, as MySQL has neither RETURNING nor
// data-modifying WITH: SELECT account_id ... ORDER BY account_id FOR UPDATE locks the accounts
// and tells which exist; one multi-row INSERT ... ON DUPLICATE KEY UPDATE balance = balance +
// VALUES(balance) credits each existing account once with its sum; one multi-row INSERT writes
// the entries in batch order. An overflow fails with error 1690 (SQLSTATE 22003), and the
// sink applies each credit alone as on Postgres.
//
// # Inspection
//
// [Store.Balances], [Store.Entries] and [Store.Markers] read what the tests and the worked
// example compare, operation id by operation id.
package accounts
