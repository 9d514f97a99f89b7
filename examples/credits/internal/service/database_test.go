package service_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/streamledger/streamledger/examples/credits/internal/service"
	"github.com/streamledger/streamledger/internal/mytest"
	"github.com/streamledger/streamledger/internal/pgtest"
)

// database is where a test's service keeps the accounts and the markers: a private schema
// on Postgres or a private database on MySQL.
type database interface {
	// configure points cfg at the database.
	configure(cfg *service.Config)
	// kill makes the server end session conn (a faults.Attempt's Conn), as the death of the
	// process holding it would.
	kill(ctx context.Context, conn int64) error
	// blockedOn returns how many sessions wait for a lock that session conn holds.
	blockedOn(ctx context.Context, conn int64) (int, error)
}

// databases are the databases the tests of the effect sink's crash points and races run on.
var databases = []string{"postgres", "mysql"}

func openDatabase(t *testing.T, name string) database {
	switch name {
	case "postgres":
		return pgDatabase{pgtest.New(t)}
	case "mysql":
		return myDatabase{mytest.New(t)}
	}
	t.Fatalf("no database %q", name)
	return nil
}

type pgDatabase struct{ db *pgtest.DB }

func (d pgDatabase) configure(cfg *service.Config) { cfg.Pool, cfg.Schema = d.db.Pool, d.db.Schema }

func (d pgDatabase) kill(ctx context.Context, conn int64) error {
	var ok bool
	if err := d.db.Pool.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, int32(conn)).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("backend %d not terminated", conn)
	}
	return nil
}

func (d pgDatabase) blockedOn(ctx context.Context, conn int64) (int, error) {
	var n int
	err := d.db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, int32(conn)).Scan(&n)
	return n, err
}

// innodbCacheIdle is how long InnoDB's information_schema lock tables must go unread
// before a read refreshes them.
const innodbCacheIdle = 110 * time.Millisecond

type myDatabase struct{ db *mytest.DB }

func (d myDatabase) configure(cfg *service.Config) { cfg.MySQL = d.db.DB }

func (d myDatabase) kill(ctx context.Context, conn int64) error {
	_, err := d.db.DB.ExecContext(ctx, fmt.Sprintf("KILL %d", conn))
	return err
}

// blockedOn reads InnoDB's lock waits (information_schema.INNODB_LOCK_WAITS, as MariaDB
// keeps it; MySQL 8 moved it to performance_schema.data_lock_waits). InnoDB refreshes these
// tables only when they were not read for 100 ms, so a caller that polls faster would read
// the same stale rows forever: it waits that long first.
func (d myDatabase) blockedOn(ctx context.Context, conn int64) (int, error) {
	time.Sleep(innodbCacheIdle)
	var n int
	err := d.db.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.INNODB_LOCK_WAITS w "+
		"JOIN information_schema.INNODB_TRX b ON b.trx_id = w.blocking_trx_id WHERE b.trx_mysql_thread_id = ?", conn).Scan(&n)
	return n, err
}
