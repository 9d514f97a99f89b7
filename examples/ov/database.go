package main

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/streamledger/streamledger/examples/ov/pipeline"
)

// mysqlScheme starts a --dsn that names a MySQL or MariaDB server.
const mysqlScheme = "mysql://"

// openDatabase opens the database dsn names for the processor: a mysql:// DSN opens MySQL or
// MariaDB (the tables go in the DSN's database), anything else Postgres (the tables go in
// schema). close releases it.
func openDatabase(ctx context.Context, dsn, schema string) (db pipeline.Database, close func(), err error) {
	if !strings.HasPrefix(dsn, mysqlScheme) {
		pool, err := connect(ctx, dsn)
		if err != nil {
			return nil, nil, err
		}
		return pipeline.Postgres(pool, schema), pool.Close, nil
	}
	if schema != "" && schema != "public" {
		return nil, nil, fmt.Errorf("--schema %q: with MySQL the tables go in the DSN's database", schema)
	}
	cfg, err := mysqlConfig(dsn)
	if err != nil {
		return nil, nil, err
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("mysql: %w", err)
	}
	h := sql.OpenDB(conn)
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := h.PingContext(pctx); err != nil {
		_ = h.Close()
		return nil, nil, fmt.Errorf("mysql at %s: %w", redactDSN(dsn), err)
	}
	return pipeline.MySQL(h), func() { _ = h.Close() }, nil
}

// mysqlConfig reads a mysql:// DSN: a URL, mysql://user:password@host:port/database?params
// (port 3306 when left out), or the driver's own DSN after the scheme,
// mysql://user:password@tcp(host:port)/database?params. The parameters are the driver's
// (parseTime, tls, timeout...).
func mysqlConfig(dsn string) (*mysql.Config, error) {
	rest := strings.TrimPrefix(dsn, mysqlScheme)
	if strings.Contains(rest, "tcp(") || strings.Contains(rest, "unix(") {
		cfg, err := mysql.ParseDSN(rest)
		if err != nil {
			return nil, fmt.Errorf("mysql DSN %s: %w", redactDSN(dsn), err)
		}
		return cfg, nil
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, fmt.Errorf("mysql DSN %s: %w", redactDSN(dsn), err)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("mysql DSN %s: no host", redactDSN(dsn))
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "3306")
	}
	var driver strings.Builder
	if u.User != nil {
		driver.WriteString(u.User.Username())
		if pw, ok := u.User.Password(); ok {
			driver.WriteString(":" + pw)
		}
		driver.WriteString("@")
	}
	fmt.Fprintf(&driver, "tcp(%s)/%s", host, strings.TrimPrefix(u.Path, "/"))
	if u.RawQuery != "" {
		driver.WriteString("?" + u.RawQuery)
	}
	cfg, err := mysql.ParseDSN(driver.String())
	if err != nil {
		return nil, fmt.Errorf("mysql DSN %s: %w", redactDSN(dsn), err)
	}
	return cfg, nil
}
