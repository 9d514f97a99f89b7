package main

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/examples/ov/feed"
	"github.com/streamledger/streamledger/examples/ov/tables"
	"github.com/streamledger/streamledger/internal/kafkatest"
	"github.com/streamledger/streamledger/internal/mytest"
)

func TestMySQLConfig(t *testing.T) {
	for _, tc := range []struct {
		dsn                          string
		user, passwd, addr, database string
		parseTime                    bool
	}{
		{"mysql://root@127.0.0.1:3306/test", "root", "", "127.0.0.1:3306", "test", false},
		{"mysql://root@localhost/test", "root", "", "localhost:3306", "test", false},
		{"mysql://app:s%40cret@db.example:3307/ov?parseTime=true", "app", "s@cret", "db.example:3307", "ov", true},
		{"mysql://app:pw@tcp(10.0.0.1:3306)/ov?parseTime=true", "app", "pw", "10.0.0.1:3306", "ov", true},
		{"mysql://root@[::1]:3306/test", "root", "", "[::1]:3306", "test", false},
	} {
		cfg, err := mysqlConfig(tc.dsn)
		require.NoError(t, err, tc.dsn)
		assert.Equal(t, []any{tc.user, tc.passwd, "tcp", tc.addr, tc.database, tc.parseTime},
			[]any{cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName, cfg.ParseTime}, tc.dsn)
	}
	for _, bad := range []string{"mysql:///test", "mysql://root@host/test?parseTime=maybe", "mysql://root@tcp(host/test"} {
		_, err := mysqlConfig(bad)
		assert.Error(t, err, bad)
	}
}

// TestRunOnMySQL runs the processor with a mysql:// --dsn, bounded: it writes the feed's
// windows and state to MariaDB (or MySQL) and exits by itself.
func TestRunOnMySQL(t *testing.T) {
	db := mytest.New(t)
	topics := map[string]int32{}
	for _, tp := range []string{feed.DefaultPositionsTopic, feed.DefaultPredictionsTopic} {
		topics[tp], topics[dlq.DefaultTopic(tp)] = 3, 3
	}
	cluster := kafkatest.Start(t, kafkatest.Config{Topics: topics})
	var out, errb bytes.Buffer
	require.Equal(t, 0, realMain([]string{"feed", "--brokers", cluster.Addr(), "--scale", "0.02", "--duration", "20m", "--start", "08:00"},
		&out, &errb), errb.String())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, runProcessor(ctx, []string{"--brokers", cluster.Addr(), "--dsn", "mysql://" + db.DSN, "--until-caught-up",
		"--flush-interval", "200ms", "--metrics-addr", "", "--group", "ov-mysql-test"}, io.Discard, io.Discard))
	for _, table := range []string{tables.AggregatesTable, tables.VehiclesTable, tables.TripsTable} {
		var rows int
		require.NoError(t, db.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+table+"`").Scan(&rows))
		assert.Positive(t, rows, table)
	}
	err := runProcessor(ctx, []string{"--dsn", "mysql://" + db.DSN, "--schema", "ov"}, io.Discard, io.Discard)
	assert.ErrorContains(t, err, "the tables go in the DSN's database")
}
