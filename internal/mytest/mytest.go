package mytest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// DefaultDSN is used when MYSQL_DSN is unset.
const DefaultDSN = "root@tcp(127.0.0.1:3306)/test"

// DSN returns MYSQL_DSN, or [DefaultDSN].
func DSN() string {
	if d := os.Getenv("MYSQL_DSN"); d != "" {
		return d
	}
	return DefaultDSN
}

// DB is a private database on the test server.
type DB struct {
	// Name is the unique database's name (unquoted).
	Name string
	// DB is a handle whose connections use Name as their default database.
	DB *sql.DB
	// DSN names the server and Name, with the parameters of the server's DSN.
	DSN string

	server *mysql.Config
}

// New connects to the server, creates a unique database and returns it with a handle. The
// database is dropped and the handles are closed when t ends.
func New(t testing.TB) *DB {
	t.Helper()
	server, err := mysql.ParseDSN(DSN())
	if err != nil {
		t.Fatalf("mytest: MYSQL_DSN %q: %v", DSN(), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin, err := open(server, server.DBName)
	if err == nil {
		err = admin.PingContext(ctx)
	}
	if err != nil {
		unreachable(t, server, err)
		return nil
	}
	defer admin.Close()
	name := uniqueName(t.Name())
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE `"+name+"`"); err != nil {
		t.Fatalf("mytest: create database %s: %v", name, err)
	}
	cfg := server.Clone()
	cfg.DBName = name
	db := &DB{Name: name, DSN: cfg.FormatDSN(), server: server}
	t.Cleanup(func() { db.drop(t) })
	db.DB = db.Open(t)
	return db
}

// Open returns another handle on the database, closed when t ends, before the database is
// dropped.
func (db *DB) Open(t testing.TB) *sql.DB {
	t.Helper()
	h, err := open(db.server, db.Name)
	if err != nil {
		t.Fatalf("mytest: open %s: %v", db.Name, err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

func open(server *mysql.Config, name string) (*sql.DB, error) {
	cfg := server.Clone()
	cfg.DBName = name
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(conn), nil
}

func (db *DB) drop(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := open(db.server, db.server.DBName)
	if err != nil {
		t.Errorf("mytest: drop database %s: %v", db.Name, err)
		return
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+db.Name+"`"); err != nil {
		t.Errorf("mytest: drop database %s: %v", db.Name, err)
	}
}

func unreachable(t testing.TB, server *mysql.Config, err error) {
	t.Helper()
	where := server.Net + "(" + server.Addr + ")"
	if os.Getenv("CI") == "true" {
		t.Fatalf("mytest: MySQL at %s is unreachable and CI=true: %v", where, err)
	}
	t.Skipf("mytest: skipping, MySQL at %s is unreachable (set MYSQL_DSN; with CI=true this fails): %v", where, err)
}

// uniqueName turns a test name into a database name: lower-case letters, digits and
// underscores, at most 64 bytes, with a random suffix.
func uniqueName(testName string) string {
	var b strings.Builder
	b.WriteString("t_")
	for _, r := range strings.ToLower(testName) {
		if b.Len() >= 40 {
			break
		}
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	b.WriteByte('_')
	b.WriteString(hex.EncodeToString(suffix[:]))
	return b.String()
}
