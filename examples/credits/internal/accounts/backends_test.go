package accounts_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/examples/credits/internal/accounts"
	"github.com/streamledger/streamledger/internal/mytest"
	"github.com/streamledger/streamledger/internal/pgtest"
)

// backend is a database the store runs on: every test of the package runs on each.
type backend struct {
	name string
	// open returns a migrated store on a private schema or database, configured by cfg
	// (Schema aside), and a function that opens accounts a0..a(n-1) with balance 0.
	open func(t testing.TB, cfg accounts.Config) (accounts.Store, func(n int))
}

var backends = []backend{
	{name: "postgres", open: func(t testing.TB, cfg accounts.Config) (accounts.Store, func(int)) {
		db := pgtest.New(t)
		cfg.Schema = db.Schema
		st, err := accounts.NewPostgres(db.Pool, cfg)
		require.NoError(t, err)
		migrate(t, st)
		return st, func(n int) {
			_, err := db.Pool.Exec(context.Background(), fmt.Sprintf(`INSERT INTO %q.accounts (account_id, balance) `+
				`SELECT 'a' || g, 0 FROM generate_series(0, %d) g`, db.Schema, n-1))
			require.NoError(t, err)
		}
	}},
	{name: "mysql", open: func(t testing.TB, cfg accounts.Config) (accounts.Store, func(int)) {
		db := mytest.New(t)
		// Parameters interpolated by the client: one round trip per statement instead of a
		// prepare, an execution and a close.
		dsn, err := mysql.ParseDSN(db.DSN)
		require.NoError(t, err)
		dsn.InterpolateParams = true
		conn, err := mysql.NewConnector(dsn)
		require.NoError(t, err)
		h := sql.OpenDB(conn)
		t.Cleanup(func() { _ = h.Close() })
		st, err := accounts.NewMySQL(h, cfg)
		require.NoError(t, err)
		migrate(t, st)
		return st, func(n int) {
			for from := 0; from < n; from += 1000 {
				var rows []string
				for i := from; i < min(from+1000, n); i++ {
					rows = append(rows, fmt.Sprintf("('a%d', 0)", i))
				}
				_, err := h.ExecContext(context.Background(), "INSERT INTO accounts (account_id, balance) VALUES "+strings.Join(rows, ", "))
				require.NoError(t, err)
			}
		}
	}},
}

func migrate(t testing.TB, st accounts.Store) {
	require.NoError(t, st.Migrate(context.Background()))
	require.NoError(t, st.Migrate(context.Background()), "Migrate is idempotent")
}

// eachBackend runs test on every backend, as a subtest named after it.
func eachBackend(t *testing.T, test func(t *testing.T, b backend)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { test(t, b) })
	}
}
