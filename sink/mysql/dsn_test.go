package mysql_test

import (
	"database/sql"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/mytest"
	"github.com/streamledger/streamledger/sink/mysql"
	"github.com/streamledger/streamledger/sink/sinktest"
)

// The sink does not depend on the DSN's parameters: with times parsed by the driver in a
// location far from UTC, and with parameters interpolated on the client (the text protocol
// instead of prepared statements), it passes the same suite.
func TestConformanceWithOtherDSNParameters(t *testing.T) {
	if testing.Short() {
		t.Skip("TestConformance covers -short")
	}
	for _, tc := range []struct {
		name   string
		adjust func(*gomysql.Config)
	}{
		{"parseTime in UTC+9", func(c *gomysql.Config) { c.ParseTime, c.Loc = true, time.FixedZone("UTC+9", 9*3600) }},
		{"interpolateParams, parseTime in UTC-5", func(c *gomysql.Config) {
			c.InterpolateParams, c.ParseTime, c.Loc = true, true, time.FixedZone("UTC-5", -5*3600)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sinktest.Run(t, func(t *testing.T, setup sinktest.Setup) sinktest.Subject {
				db := mytest.New(t)
				cfg, err := gomysql.ParseDSN(db.DSN)
				require.NoError(t, err)
				tc.adjust(cfg)
				conn, err := gomysql.NewConnector(cfg)
				require.NoError(t, err)
				h := sql.OpenDB(conn)
				t.Cleanup(func() { _ = h.Close() })
				s, err := mysql.New(h, mysql.Config{Aggregates: setup.Aggregates, States: setup.States, Clock: setup.Clock,
					Horizon: setup.Horizon, Retry: fastRetry})
				require.NoError(t, err)
				require.NoError(t, s.Migrate(testCtx(t)))
				return s
			}, sinktest.Features{ConcurrentWriters: true, Rounds: 1})
		})
	}
}
