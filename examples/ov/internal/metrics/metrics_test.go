package metrics_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/examples/ov/internal/metrics"
	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/ledger/consumer"
)

func TestHooks(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	require.NoError(t, err)
	_, err = metrics.New(reg)
	assert.Error(t, err, "registering twice")

	p0 := ledger.TopicPartition{Topic: "pred", Partition: 0}
	p1 := ledger.TopicPartition{Topic: "pred", Partition: 1}
	for _, o := range []consumer.Outcome{consumer.Admitted, consumer.Admitted, consumer.Late, consumer.DeadLettered} {
		m.OnMessage(consumer.MessageInfo{TopicPartition: p0, Outcome: o})
	}
	m.OnDeadLetter(consumer.DeadLetterInfo{TopicPartition: p0})
	m.OnDeadLetter(consumer.DeadLetterInfo{TopicPartition: p0, Err: errors.New("broker down")})
	m.OnWrite(consumer.WriteInfo{Kind: consumer.WriteClose, Source: p0, Rows: 40, ClosedThrough: time.Unix(1000, 0), Duration: time.Millisecond})
	m.OnWrite(consumer.WriteInfo{Kind: consumer.WriteState, Table: "vehicle_latest", Rows: 7})
	m.OnWrite(consumer.WriteInfo{Kind: consumer.WriteState, Rows: 9, Err: errors.New("db down")})
	m.OnCommit(consumer.CommitInfo{Commits: []ledger.Commit{{TopicPartition: p0, Offset: 10}, {TopicPartition: p1, Offset: 5}}})
	m.OnCommit(consumer.CommitInfo{Commits: []ledger.Commit{{TopicPartition: p0, Offset: 12}, {TopicPartition: p1, Offset: 9}},
		Failed: []ledger.Commit{{TopicPartition: p1, Offset: 9}}})
	m.OnCommit(consumer.CommitInfo{Commits: []ledger.Commit{{TopicPartition: p0, Offset: 20}}, Err: errors.New("rebalancing")})
	m.OnAssign(consumer.AssignInfo{TopicPartition: p0})
	m.OnAssign(consumer.AssignInfo{TopicPartition: p1})
	m.OnPartition(consumer.PartitionInfo{TopicPartition: p0, Lag: 3, Watermark: time.Unix(2000, 0)})
	m.OnPartition(consumer.PartitionInfo{TopicPartition: p1, Lag: 4})
	m.OnTick(consumer.TickInfo{Partitions: 2, Pending: 17, OpenKeys: 6994, MinWatermark: time.Unix(1500, 0)})

	s := m.Snapshot()
	assert.Equal(t, metrics.Snapshot{Consumed: 4, Admitted: 2, Late: 1, DeadLettered: 1, Lag: 7, Pending: 17, OpenKeys: 6994,
		Committed: 12 + 5, Commits: 2, StateRows: 7, Partials: 40, DeadLettersDelivered: 1, MinWatermark: time.Unix(1500, 0),
		Partitions: 2}, s)

	got := gather(t, reg)
	for series, want := range map[string]float64{
		`processor_consumed_total{topic="pred"}`:                                 4,
		`processor_admitted_total{topic="pred"}`:                                 2,
		`processor_late_events_total{topic="pred"}`:                              1,
		`processor_decode_errors_total{topic="pred"}`:                            1,
		`processor_dead_letters_total{result="delivered",topic="pred"}`:          1,
		`processor_dead_letters_total{result="failed",topic="pred"}`:             1,
		`processor_commits_total`:                                                2,
		`processor_commit_failures_total`:                                        2,
		`processor_sink_writes_total{kind="close"}`:                              1,
		`processor_sink_writes_total{kind="state"}`:                              1,
		`processor_sink_write_failures_total{kind="state"}`:                      1,
		`processor_sink_rows_total{kind="close"}`:                                40,
		`processor_sink_rows_total{kind="state"}`:                                7,
		`processor_uncommitted_messages`:                                         17,
		`processor_open_windows`:                                                 6994,
		`processor_watermark_seconds`:                                            1500,
		`processor_assigned_partitions`:                                          2,
		`processor_consumer_lag{partition="0",topic="pred"}`:                     3,
		`processor_consumer_lag{partition="1",topic="pred"}`:                     4,
		`processor_partition_watermark_seconds{partition="0",topic="pred"}`:      2000,
		`processor_partition_closed_through_seconds{partition="0",topic="pred"}`: 1000,
	} {
		v, ok := got[series]
		if assert.True(t, ok, "series %s", series) {
			assert.Equal(t, want, v, series)
		}
	}

	m.OnRevoke(consumer.RevokeInfo{TopicPartition: p1})
	got = gather(t, reg)
	assert.NotContains(t, got, `processor_consumer_lag{partition="1",topic="pred"}`, "a revoked partition's series are deleted")
	assert.Contains(t, got, `processor_consumer_lag{partition="0",topic="pred"}`)
	assert.Equal(t, 1.0, got["processor_assigned_partitions"])
}

// gather returns every counter and gauge series of reg by name{labels}, labels sorted.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, mm := range mf.GetMetric() {
			var labels []string
			for _, l := range mm.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			name := mf.GetName()
			if len(labels) > 0 {
				name += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case mm.GetCounter() != nil:
				out[name] = mm.GetCounter().GetValue()
			case mm.GetGauge() != nil:
				out[name] = mm.GetGauge().GetValue()
			}
		}
	}
	return out
}
