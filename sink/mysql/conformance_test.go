package mysql_test

import (
	"testing"

	"github.com/streamledger/streamledger/sink/mysql"
	"github.com/streamledger/streamledger/sink/sinktest"
)

func TestConformance(t *testing.T) {
	sinktest.Run(t, func(t *testing.T, setup sinktest.Setup) sinktest.Subject {
		s, _ := newSink(t, func(c *mysql.Config) {
			c.Aggregates, c.States, c.Clock, c.Horizon = setup.Aggregates, setup.States, setup.Clock, setup.Horizon
		})
		return s
	}, sinktest.Features{ConcurrentWriters: true})
}
