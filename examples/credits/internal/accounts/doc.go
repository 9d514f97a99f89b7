// Package accounts holds the credits example's business tables in Postgres and the effect
// the effect sink applies for each credit.
//
// # Tables
//
// In the configured schema, created by [Store.Migrate]:
//
//	accounts        (account_id text PRIMARY KEY, balance bigint NOT NULL)
//	account_entries (entry_id bigserial PRIMARY KEY, op_id text NOT NULL,
//	                 account_id text NOT NULL REFERENCES accounts, amount bigint NOT NULL,
//	                 applied_at timestamptz NOT NULL)
//
// account_entries is the per-account ledger: one row per credit applied. It has no unique
// constraint on op_id on purpose: the effect sink's marker is the only arbiter of "once", and
// an entries table that deduplicated on its own would hide a marker that failed to. So the
// number of entries of an operation id is the number of times it was applied, which the
// tests compare with 1 for every id.
//
// # The effect
//
// [Store.Credit] is the effect of one credit, run by the effect sink inside the marker's
// transaction, as one statement:
//
//	WITH credited AS (
//	  UPDATE accounts SET balance = balance + $amount WHERE account_id = $account
//	  RETURNING account_id)
//	INSERT INTO account_entries (op_id, account_id, amount, applied_at)
//	SELECT $op_id, account_id, $amount, $applied_at FROM credited
//
// Its command tag counts the entries written: zero for an unknown account, which makes the
// sink roll the marker back ([sink.ErrNoEffect]). A credit the database refuses as data (an
// overflowing balance, a constraint) is a [*RejectedError]: rolled back, no marker, and a
// dead letter rather than an outage.
//
// # Inspection
//
// [Store.Balances], [Store.Entries] and [Store.Markers] read what the tests and the worked
// example compare, operation id by operation id.
package accounts
