package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/streamledger/streamledger/sink"
)

// migrationsTable records the schema version of every object set the library created.
const migrationsTable = "streamledger_migrations"

// migrateLock names the server-wide lock (GET_LOCK) that serializes migrations of one
// database: MySQL's DDL commits implicitly, so a transaction cannot make a migration atomic,
// and two processes creating the same objects must not interleave.
const migrateLock = "streamledger_migrate:"

// migrateLockWait bounds how long Migrate waits for another process's migration; a
// context deadline that comes sooner shortens the wait to the whole seconds before it.
const migrateLockWait = 60 * time.Second

// ErrSchemaTooNew is returned by Migrate when the database holds a newer schema version than
// this build knows: an older binary must not write into it.
var ErrSchemaTooNew = errors.New("mysql: schema version is newer than this build")

// migration is the versioned DDL of one object set: steps[i] brings it to version i+1. DDL
// is not transactional in MySQL, so every statement must be safe to run again (CREATE TABLE
// IF NOT EXISTS with its indexes inline): a migration cut off before it recorded its version
// runs again from the step it was at.
type migration struct {
	object string
	steps  [][]string
}

// migrate brings every object set of ms to its latest version, under the database's
// migration lock.
func migrate(ctx context.Context, db *sql.DB, ms []migration) (err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("mysql: migrate: connect: %w", err)
	}
	defer conn.Close()
	lock, err := lockName(ctx, conn)
	if err != nil {
		return err
	}
	wait := migrateLockWait
	if dl, ok := ctx.Deadline(); ok {
		wait = max(min(wait, time.Until(dl).Truncate(time.Second)), 0)
	}
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, ?)", lock, int(wait/time.Second)).Scan(&got); err != nil {
		return fmt.Errorf("mysql: migrate: lock: %w", err)
	}
	switch {
	case !got.Valid: // an error on the server, such as the session being killed
		return fmt.Errorf("mysql: migrate: lock %q: GET_LOCK returned NULL, expected 1", lock)
	case got.Int64 != 1:
		return fmt.Errorf("mysql: migrate: lock %q: another migration held it for %v", lock, wait)
	}
	defer func() {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "DO RELEASE_LOCK(?)", lock)
	}()
	mt := quote(migrationsTable)
	if _, err := conn.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+mt+
		" (`object` VARCHAR(255) NOT NULL PRIMARY KEY, `version` INT NOT NULL,"+
		" `applied_at` TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6))"); err != nil {
		return fmt.Errorf("mysql: migrate: %s: %w", migrationsTable, err)
	}
	for _, m := range ms {
		if err := m.apply(ctx, conn, mt); err != nil {
			return err
		}
	}
	return nil
}

// lockName returns the name of the migration lock of conn's database. A connection without a
// default database (a DSN that names none) is refused: DATABASE() is NULL there, and so
// would be every lock name and table lookup built on it.
func lockName(ctx context.Context, conn *sql.Conn) (string, error) {
	var name sql.NullString
	if err := conn.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&name); err != nil {
		return "", fmt.Errorf("mysql: migrate: current database: %w", err)
	}
	if !name.Valid {
		return "", fmt.Errorf("%w: mysql: migrate: the connection has no default database: the DSN names no "+
			"database (user@tcp(host:3306)/dbname), and the sink's tables live in the DSN's database", sink.ErrConfig)
	}
	return migrateLock + name.String, nil
}

func (m migration) apply(ctx context.Context, conn *sql.Conn, mt string) error {
	var have int
	err := conn.QueryRowContext(ctx, "SELECT `version` FROM "+mt+" WHERE `object` = ?", m.object).Scan(&have)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("mysql: migrate %s: read version: %w", m.object, err)
	}
	if have > len(m.steps) {
		return fmt.Errorf("%w: %s is at version %d, this build knows %d", ErrSchemaTooNew, m.object, have, len(m.steps))
	}
	for v := have; v < len(m.steps); v++ {
		for _, stmt := range m.steps[v] {
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("mysql: migrate %s to version %d: %w", m.object, v+1, err)
			}
		}
		if _, err := conn.ExecContext(ctx, "INSERT INTO "+mt+" (`object`, `version`) VALUES (?, ?)"+
			" ON DUPLICATE KEY UPDATE `version` = VALUES(`version`), `applied_at` = CURRENT_TIMESTAMP(6)",
			m.object, v+1); err != nil {
			return fmt.Errorf("mysql: migrate %s: record version %d: %w", m.object, v+1, err)
		}
	}
	return nil
}
