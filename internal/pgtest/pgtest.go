package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultURL is used when DATABASE_URL is unset.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// URL returns DATABASE_URL, or [DefaultURL].
func URL() string {
	if u := os.Getenv("DATABASE_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// DB is a private schema on the test server.
type DB struct {
	// Schema is the unique schema's name (unquoted).
	Schema string
	// Pool is a pool whose connections use Schema as search_path.
	Pool *pgxpool.Pool

	url string
}

// New connects to the server, creates a unique schema and returns it with a pool. The
// schema is dropped and the pools are closed when t ends.
func New(t testing.TB) *DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	url := URL()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		unreachable(t, url, err)
		return nil
	}
	defer conn.Close(ctx)
	schema := uniqueName(t.Name())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatalf("pgtest: create schema %s: %v", schema, err)
	}
	db := &DB{Schema: schema, url: url}
	t.Cleanup(func() { db.drop(t) })
	db.Pool = db.NewPool(t, nil)
	return db
}

// NewPool returns another pool on the schema; configure, if not nil, may adjust its
// configuration (a tracer, a connection limit) before it connects. The pool is closed when
// t ends, before the schema is dropped.
func (db *DB) NewPool(t testing.TB, configure func(*pgxpool.Config)) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(db.url)
	if err != nil {
		t.Fatalf("pgtest: parse %q: %v", db.url, err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = db.Schema
	if configure != nil {
		configure(cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("pgtest: pool: %v", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		unreachable(t, db.url, err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func (db *DB) drop(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, db.url)
	if err != nil {
		t.Errorf("pgtest: drop schema %s: connect: %v", db.Schema, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{db.Schema}.Sanitize()+" CASCADE"); err != nil {
		t.Errorf("pgtest: drop schema %s: %v", db.Schema, err)
	}
}

func unreachable(t testing.TB, url string, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("pgtest: Postgres at %s is unreachable and CI=true: %v", redact(url), err)
	}
	t.Skipf("pgtest: skipping, Postgres at %s is unreachable (set DATABASE_URL; with CI=true this fails): %v", redact(url), err)
}

// redact drops a password from a URL for messages.
func redact(url string) string {
	at := strings.LastIndexByte(url, '@')
	scheme := strings.Index(url, "://")
	if at < 0 || scheme < 0 || scheme > at {
		return url
	}
	userinfo := url[scheme+3 : at]
	if i := strings.IndexByte(userinfo, ':'); i >= 0 {
		return url[:scheme+3] + userinfo[:i] + ":xxx" + url[at:]
	}
	return url
}

// uniqueName turns a test name into a schema name: lower-case letters, digits and
// underscores, at most 63 bytes, with a random suffix.
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
