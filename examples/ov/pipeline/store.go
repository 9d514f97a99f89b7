package pipeline

import (
	"context"
	"database/sql"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamledger/streamledger/examples/ov/tables"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/mysql"
	"github.com/streamledger/streamledger/sink/postgres"
)

// Store is the sink of the OV tables a pipeline writes through: it reads back what it
// stored, and creates its tables.
type Store interface {
	sink.Sink
	sink.Reader
	Migrate(ctx context.Context) error
}

// Database opens the pipeline's [Store] with the clock and the hooks the pipeline passes
// (nil clock: time.Now).
type Database func(clock func() time.Time, hooks []sink.Hook) (Store, error)

// Postgres is the database of the OV tables in schema ("" means public), written through
// pool.
func Postgres(pool *pgxpool.Pool, schema string) Database {
	return func(clock func() time.Time, hooks []sink.Hook) (Store, error) {
		cfg := tables.Postgres(schema)
		cfg.Clock, cfg.Hooks = clock, hooks
		return postgres.New(pool, cfg)
	}
}

// MySQL is the database of the OV tables in the database of db (MySQL or MariaDB).
func MySQL(db *sql.DB) Database {
	return func(clock func() time.Time, hooks []sink.Hook) (Store, error) {
		cfg := tables.MySQL()
		cfg.Clock, cfg.Hooks = clock, hooks
		return mysql.New(db, cfg)
	}
}
