// Package mytest gives tests a private database on the real MySQL or MariaDB server.
//
// # Server
//
// The server is named by MYSQL_DSN, a go-sql-driver/mysql DSN, or [DefaultDSN] when it is
// unset. When the server cannot be reached, [New] fails the test if CI=true and skips it
// otherwise, with a message saying so: in CI a missing database must never pass silently.
//
// # Isolation
//
// Every [New] creates a database with a unique name, hands out a *sql.DB whose connections
// use it, and drops the database when the test ends. Packages and tests that run in
// parallel never see each other's tables.
package mytest
