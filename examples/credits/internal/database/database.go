// Package database opens the credits example's database from a URL, Postgres or MySQL, and
// gives each run a schema of its own: a Postgres schema, or a MySQL database on the server.
package database

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamledger/streamledger/examples/credits/internal/accounts"
	"github.com/streamledger/streamledger/examples/credits/internal/service"
)

// DB is an open database: a Postgres pool, or a MySQL server with a handle per schema.
type DB struct {
	url string

	pool *pgxpool.Pool

	my      *mysql.Config
	admin   *sql.DB
	conns   int
	mu      sync.Mutex
	schemas map[string]*sql.DB
}

// Open connects to the database of rawURL: mysql://user:password@host:port/database?params
// selects MySQL or MariaDB (the driver's DSN parameters; interpolateParams defaults to true),
// anything else is a Postgres URL or DSN for pgx. conns bounds the connections of each pool,
// zero leaves the driver's default.
func Open(ctx context.Context, rawURL string, conns int) (*DB, error) {
	d := &DB{url: rawURL, conns: conns}
	if !strings.HasPrefix(rawURL, "mysql://") {
		cfg, err := pgxpool.ParseConfig(rawURL)
		if err != nil {
			return nil, fmt.Errorf("database %s: %w", d.Redacted(), err)
		}
		if conns > 0 {
			cfg.MaxConns = int32(conns)
		}
		if d.pool, err = pgxpool.NewWithConfig(ctx, cfg); err == nil {
			err = d.pool.Ping(ctx)
		}
		if err != nil {
			d.Close()
			return nil, fmt.Errorf("database %s: %w", d.Redacted(), err)
		}
		return d, nil
	}
	cfg, err := mysqlConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("database %s: %w", d.Redacted(), err)
	}
	d.my, d.schemas = cfg, map[string]*sql.DB{}
	if d.admin, err = d.open(cfg.DBName); err == nil {
		err = d.admin.PingContext(ctx)
	}
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("database %s: %w", d.Redacted(), err)
	}
	return d, nil
}

// mysqlConfig reads a mysql:// URL into the driver's configuration.
func mysqlConfig(rawURL string) (*mysql.Config, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	host := u.Host
	if u.Port() == "" {
		host += ":3306"
	}
	q := u.Query()
	if !q.Has("interpolateParams") {
		q.Set("interpolateParams", "true")
	}
	cfg, err := mysql.ParseDSN(fmt.Sprintf("tcp(%s)/%s?%s", host, strings.TrimPrefix(u.Path, "/"), q.Encode()))
	if err != nil {
		return nil, err
	}
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	return cfg, nil
}

func (d *DB) open(database string) (*sql.DB, error) {
	cfg := d.my.Clone()
	cfg.DBName = database
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	h := sql.OpenDB(conn)
	if d.conns > 0 {
		h.SetMaxOpenConns(d.conns)
		h.SetMaxIdleConns(d.conns)
	}
	return h, nil
}

// MySQL reports whether the database is MySQL or MariaDB.
func (d *DB) MySQL() bool { return d.my != nil }

// Close closes every pool.
func (d *DB) Close() {
	if d.pool != nil {
		d.pool.Close()
	}
	if d.admin != nil {
		_ = d.admin.Close()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, h := range d.schemas {
		_ = h.Close()
	}
}

// handle returns the MySQL handle whose connections use database schema, creating the
// database when it does not exist.
func (d *DB) handle(ctx context.Context, schema string) (*sql.DB, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if h, ok := d.schemas[schema]; ok {
		return h, nil
	}
	if _, err := d.admin.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+quote(schema)); err != nil {
		return nil, fmt.Errorf("database: create %s: %w", schema, err)
	}
	h, err := d.open(schema)
	if err != nil {
		return nil, err
	}
	d.schemas[schema] = h
	return h, nil
}

func quote(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

// Configure points cfg at schema: a schema of the Postgres database, or a database of the
// MySQL server (created when missing).
func (d *DB) Configure(ctx context.Context, cfg *service.Config, schema string) error {
	if d.pool != nil {
		cfg.Pool, cfg.Schema = d.pool, schema
		return nil
	}
	h, err := d.handle(ctx, schema)
	cfg.MySQL = h
	return err
}

// Store returns the accounts store of schema, with the default configuration.
func (d *DB) Store(ctx context.Context, schema string) (accounts.Store, error) {
	if d.pool != nil {
		return accounts.NewPostgres(d.pool, accounts.Config{Schema: schema})
	}
	h, err := d.handle(ctx, schema)
	if err != nil {
		return nil, err
	}
	return accounts.NewMySQL(h, accounts.Config{})
}

// OpenAccounts opens n accounts named by name(0..n-1) with balance 0, in a few statements;
// the store's tables must exist.
func (d *DB) OpenAccounts(ctx context.Context, schema string, n int, name func(int) string) error {
	const chunk = 5000
	for from := 0; from < n; from += chunk {
		to := min(from+chunk, n)
		ids := make([]string, 0, to-from)
		for i := from; i < to; i++ {
			ids = append(ids, name(i))
		}
		var err error
		if d.pool != nil {
			_, err = d.pool.Exec(ctx, "INSERT INTO "+pgx.Identifier{schema, "accounts"}.Sanitize()+
				" (account_id, balance) SELECT unnest($1::text[]), 0", ids)
		} else {
			var h *sql.DB
			if h, err = d.handle(ctx, schema); err == nil {
				args := make([]any, len(ids))
				for i, id := range ids {
					args[i] = id
				}
				_, err = h.ExecContext(ctx, "INSERT INTO accounts (account_id, balance) VALUES "+
					strings.TrimSuffix(strings.Repeat("(?, 0), ", len(ids)), ", "), args...)
			}
		}
		if err != nil {
			return fmt.Errorf("database: opening accounts: %w", err)
		}
	}
	return nil
}

// Drop drops schema and everything in it.
func (d *DB) Drop(ctx context.Context, schema string) error {
	if d.pool != nil {
		_, err := d.pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		return err
	}
	d.mu.Lock()
	if h, ok := d.schemas[schema]; ok {
		_ = h.Close()
		delete(d.schemas, schema)
	}
	d.mu.Unlock()
	_, err := d.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+quote(schema))
	return err
}

// Redacted returns the URL with its password hidden.
func (d *DB) Redacted() string { return Redact(d.url) }

// Redact hides a password in a database URL.
func Redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return dsn
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxx")
	}
	return u.String()
}
