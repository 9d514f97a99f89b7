// Package pgtest gives tests a private schema on the real Postgres server.
//
// # Server
//
// The server is named by DATABASE_URL, or [DefaultURL] when it is unset. When the server
// cannot be reached, [New] fails the test if CI=true and skips it otherwise, with a message
// saying so: in CI a missing database must never pass silently.
//
// # Isolation
//
// Every [New] creates a schema with a unique name, hands out pools whose search_path is
// that schema, and drops the schema (CASCADE) when the test ends. Packages and tests that
// run in parallel never see each other's tables.
package pgtest
