package main

import (
	"crypto/rand"
	"encoding/hex"
	"os"

	"github.com/streamledger/streamledger/examples/credits/internal/database"
)

// defaultDatabaseURL is used when neither -database nor DATABASE_URL is set.
const defaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

func databaseURL() string {
	if u := os.Getenv("DATABASE_URL"); u != "" {
		return u
	}
	return defaultDatabaseURL
}

// freshSchema returns a schema name no earlier run used.
func freshSchema(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}

// redact hides a password in a database URL.
func redact(dsn string) string { return database.Redact(dsn) }
