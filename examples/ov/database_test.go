package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
