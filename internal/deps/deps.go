//go:build deps

// Package deps pins the project's dependencies while the packages that use them are written.
package deps

import (
	_ "github.com/caio/go-tdigest/v4"
	_ "github.com/confluentinc/confluent-kafka-go/v2/kafka"
	_ "github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/stretchr/testify/require"
	_ "github.com/twmb/franz-go/pkg/kfake"
)
