package main

import (
	"bytes"
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/mytest"
)

// mysqlURL returns the mysql:// URL of the test server (MYSQL_DSN).
func mysqlURL(t *testing.T) string {
	cfg, err := mysql.ParseDSN(mytest.DSN())
	require.NoError(t, err)
	u := url.URL{Scheme: "mysql", Host: cfg.Addr, Path: "/" + cfg.DBName}
	if cfg.Passwd != "" {
		u.User = url.UserPassword(cfg.User, cfg.Passwd)
	} else if cfg.User != "" {
		u.User = url.User(cfg.User)
	}
	return u.String()
}

// The worked example and the demonstration, on MySQL: -database mysql://... selects it, and
// the output is the same as on Postgres.
func TestOnMySQL(t *testing.T) {
	t.Run("worked example", func(t *testing.T) {
		db := mytest.New(t)
		var out, errOut bytes.Buffer
		err := run(context.Background(), []string{"worked-example", "-database", mysqlURL(t), "-schema", db.Name}, &out, &errOut)
		require.NoError(t, err, errOut.String())
		assert.Contains(t, out.String(), "database: mysql://")
		assert.Contains(t, out.String(), "   balance a7 = 110, marker e42 present, entries of e42: 1; committed offset: 1\n")
		assert.Contains(t, out.String(), "The balance stays 110")
	})
	t.Run("demonstration", func(t *testing.T) {
		db := mytest.New(t)
		var out, errOut bytes.Buffer
		err := run(context.Background(), []string{"run", "-database", mysqlURL(t), "-schema", db.Name}, &out, &errOut)
		require.NoError(t, err, errOut.String())
		got := out.String()
		for _, want := range []string{
			"dead-lettered (credit.conflict)",
			"dead-lettered (credit.unknown_account)",
			"applied 3, duplicates 2, dead-lettered 4 (to dlq.credits)\n",
			"balances: a1 = 125, a2 = 112; markers: [d1 d2 d6]\n",
		} {
			assert.Contains(t, got, want)
		}
		assert.False(t, strings.Contains(errOut.String(), "level=WARN"), errOut.String())
	})
}
