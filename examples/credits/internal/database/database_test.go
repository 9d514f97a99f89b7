package database

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMySQLConfig(t *testing.T) {
	for _, tc := range []struct {
		url, user, passwd, addr, db string
		interpolate, parseTime      bool
	}{
		{url: "mysql://root@127.0.0.1/test", user: "root", addr: "127.0.0.1:3306", db: "test", interpolate: true},
		{url: "mysql://u:p%40ss@db.example:3307/credits?parseTime=true", user: "u", passwd: "p@ss", addr: "db.example:3307", db: "credits",
			interpolate: true, parseTime: true},
		{url: "mysql://127.0.0.1:3306/?interpolateParams=false", addr: "127.0.0.1:3306"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			cfg, err := mysqlConfig(tc.url)
			require.NoError(t, err)
			assert.Equal(t, []any{tc.user, tc.passwd, "tcp", tc.addr, tc.db, tc.interpolate, tc.parseTime},
				[]any{cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName, cfg.InterpolateParams, cfg.ParseTime})
		})
	}
}

func TestRedact(t *testing.T) {
	assert.Equal(t, "mysql://u:xxx@h/db", Redact("mysql://u:secret@h/db"))
	assert.Equal(t, "postgres://postgres@127.0.0.1:5432/test", Redact("postgres://postgres@127.0.0.1:5432/test"))
}
