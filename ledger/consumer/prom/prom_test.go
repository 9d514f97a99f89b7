package prom_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/dlq/dlqkafka"
	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/ledger/consumer"
	"github.com/streamledger/streamledger/ledger/consumer/prom"
	"github.com/streamledger/streamledger/sink"
)

var (
	p0 = ledger.TopicPartition{Topic: "pred", Partition: 0}
	p1 = ledger.TopicPartition{Topic: "pred", Partition: 1}
)

func newMetrics(t *testing.T) (*prom.Metrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := prom.New(reg)
	require.NoError(t, err)
	return m, reg
}

func TestNewRefusesASecondRegistration(t *testing.T) {
	_, reg := newMetrics(t)
	_, err := prom.New(reg)
	assert.Error(t, err)
}

// report calls every hook of m once or more, as a consumer, a sink and a producer would.
func report(m *prom.Metrics) {
	for _, o := range []consumer.Decision{consumer.Admitted, consumer.Admitted, consumer.Late, consumer.DeadLettered} {
		m.OnMessage(consumer.MessageInfo{TopicPartition: p0, Decision: o})
	}
	m.OnDeadLetter(consumer.DeadLetterInfo{TopicPartition: p0})
	m.OnDeadLetter(consumer.DeadLetterInfo{TopicPartition: p0, Err: errors.New("broker down")})
	m.OnLost(consumer.LostInfo{TopicPartition: p1, From: 20, To: 30})
	m.OnLost(consumer.LostInfo{TopicPartition: p1, From: 40, To: 45})
	m.OnWrite(consumer.WriteInfo{Kind: consumer.WriteClose, Source: p0, Rows: 40, ClosedThrough: time.Unix(1000, 0), Duration: time.Millisecond})
	m.OnWrite(consumer.WriteInfo{Kind: consumer.WriteClose, Source: p1, Rows: 2, ClosedThrough: time.Unix(800, 0), Err: errors.New("db down")})
	m.OnWrite(consumer.WriteInfo{Kind: consumer.WriteState, Table: "vehicle_latest", Rows: 7})
	m.OnWrite(consumer.WriteInfo{Kind: consumer.WriteState, Rows: 9, Err: errors.New("db down")})
	m.OnCommit(consumer.CommitInfo{Commits: []ledger.Commit{{TopicPartition: p0, Offset: 10}}})
	m.OnCommit(consumer.CommitInfo{Commits: []ledger.Commit{{TopicPartition: p1, Offset: 9}}, Failed: []ledger.Commit{{TopicPartition: p1, Offset: 9}}})
	m.OnCommit(consumer.CommitInfo{Err: errors.New("rebalancing")})
	m.OnAssign(consumer.AssignInfo{TopicPartition: p0})
	m.OnAssign(consumer.AssignInfo{TopicPartition: p1})
	m.OnPartition(consumer.PartitionInfo{TopicPartition: p0, Lag: 3, Watermark: time.Unix(2000, 0), ClosedThrough: time.Unix(1000, 0)})
	m.OnPartition(consumer.PartitionInfo{TopicPartition: p1, Lag: 4, ClosedThrough: time.Unix(900, 0)})
	m.OnTick(consumer.TickInfo{Partitions: 2, Pending: 17, OpenKeys: 6994, MinWatermark: time.Unix(1500, 0), Duration: time.Millisecond,
		SinceAssignment: 90 * time.Second, WindowBytes: 3 << 20, BacklogBytes: 1 << 20})

	m.OnWriteClose(sink.WriteCloseInfo{Batches: 2, Partials: 30, Merged: 12, Compact: 1, Folded: 1, Ignored: 2, Progress: 2, Attempts: 3})
	m.OnWriteClose(sink.WriteCloseInfo{Batches: 1, Partials: 5, Attempts: 1, Err: errors.New("refused")})
	m.OnUpsertLatest(sink.UpsertLatestInfo{Table: "vehicle_latest", Rows: 7, Attempts: 1})

	m.OnUpsertLatest(sink.UpsertLatestInfo{Table: "vehicle_latest", Attempts: 2, Err: errors.New("refused")})
	m.OnDelivery(dlqkafka.DeliveryInfo{Source: "pred", Topic: "dlq.pred", Attempts: 2, Latency: 20 * time.Millisecond})
}

func TestHooksExport(t *testing.T) {
	m, reg := newMetrics(t)
	report(m)
	got := gather(t, reg)
	for series, want := range map[string]float64{
		`processor_consumed_total{topic="pred"}`:                                 4,
		`processor_admitted_total{topic="pred"}`:                                 2,
		`processor_late_events_total{topic="pred"}`:                              1,
		`processor_decode_errors_total{topic="pred"}`:                            1,
		`processor_dead_letters_total{result="delivered",topic="pred"}`:          1,
		`processor_dead_letters_total{result="failed",topic="pred"}`:             1,
		`processor_lost_offsets_total{partition="1",topic="pred"}`:               15,
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
		`processor_unassigned_seconds`:                                           0,
		`processor_since_assignment_seconds`:                                     90,
		`processor_buffered_bytes{kind="windows"}`:                               3 << 20,
		`processor_buffered_bytes{kind="backlog"}`:                               1 << 20,
		`processor_consumer_lag{partition="0",topic="pred"}`:                     3,
		`processor_consumer_lag{partition="1",topic="pred"}`:                     4,
		`processor_partition_watermark_seconds{partition="0",topic="pred"}`:      2000,
		`processor_partition_closed_through_seconds{partition="0",topic="pred"}`: 1000,
		`processor_partition_closed_through_seconds{partition="1",topic="pred"}`: 900,
		`processor_sink_retries_total{op="write_close"}`:                         2,
		`processor_sink_retries_total{op="upsert_latest"}`:                       1,
		`processor_sink_write_failures_total{kind="close"}`:                      1,
		`processor_sink_stored_rows_total{kind="merged"}`:                        12,
		`processor_sink_stored_rows_total{kind="compact"}`:                       1,
		`processor_sink_stored_rows_total{kind="folded"}`:                        1,
		`processor_sink_stored_rows_total{kind="progress"}`:                      2,
		`processor_sink_stored_rows_total{kind="state"}`:                         7,
		`processor_sink_ignored_partials_total`:                                  2,
		`processor_dlq_retries_total{topic="pred"}`:                              1,
		`processor_sink_write_duration_seconds_count{kind="close"}`:              2,
		`processor_dlq_delivery_seconds_count{topic="pred"}`:                     1,
		`processor_tick_duration_seconds_count`:                                  1,
	} {
		v, ok := got[series]
		if assert.True(t, ok, "series %s", series) {
			assert.Equal(t, want, v, series)
		}
	}

	m.OnWrite(consumer.WriteInfo{Kind: consumer.WriteClose, Source: p0, Rows: 1, ClosedThrough: time.Unix(5000, 0)})
	got = gather(t, reg)
	assert.Equal(t, 1000.0, got[`processor_partition_closed_through_seconds{partition="0",topic="pred"}`],
		"the gauges come from the partition reports alone")

	m.OnRevoke(consumer.RevokeInfo{TopicPartition: p1})
	got = gather(t, reg)
	assert.NotContains(t, got, `processor_consumer_lag{partition="1",topic="pred"}`, "a revoked partition's series are deleted")
	assert.NotContains(t, got, `processor_partition_closed_through_seconds{partition="1",topic="pred"}`)
	assert.Contains(t, got, `processor_consumer_lag{partition="0",topic="pred"}`)
	assert.Equal(t, 1.0, got["processor_assigned_partitions"])
}

func TestMetricNamesFollowConventions(t *testing.T) {
	m, reg := newMetrics(t)
	report(m)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	require.NoError(t, err)
	assert.Empty(t, problems)
}

// TestConcurrentHooks calls every hook from several goroutines at once, as the consumer's
// workers, its sink writes and the producer's delivery goroutine do; run it with -race.
// The counts must add up.
func TestConcurrentHooks(t *testing.T) {
	m, reg := newMetrics(t)
	const goroutines, rounds = 8, 200
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			tp := ledger.TopicPartition{Topic: fmt.Sprintf("t%d", g%3), Partition: int32(g)}
			for range rounds {
				m.OnMessage(consumer.MessageInfo{TopicPartition: tp, Decision: consumer.Admitted})
				m.OnPartition(consumer.PartitionInfo{TopicPartition: tp, Lag: 1})
				m.OnWriteClose(sink.WriteCloseInfo{Merged: 1, Attempts: 1})
				m.OnDelivery(dlqkafka.DeliveryInfo{Source: tp.Topic, Attempts: 1})
				m.OnTick(consumer.TickInfo{Pending: 1})
			}
			m.OnRevoke(consumer.RevokeInfo{TopicPartition: tp})
		})
	}
	wg.Wait()
	got := gather(t, reg)
	var consumed float64
	for topic := range 3 {
		consumed += got[fmt.Sprintf(`processor_consumed_total{topic="t%d"}`, topic)]
	}
	assert.Equal(t, float64(goroutines*rounds), consumed)
	assert.Equal(t, float64(goroutines*rounds), got[`processor_sink_stored_rows_total{kind="merged"}`])
}

// TestOnMessageDoesNotAllocate: the per-message hook allocates nothing once its topic has
// been seen.
func TestOnMessageDoesNotAllocate(t *testing.T) {
	m, _ := newMetrics(t)
	info := consumer.MessageInfo{TopicPartition: p0, Decision: consumer.Late}
	m.OnMessage(info)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { m.OnMessage(info) }))
}

// gather returns every series of reg by name{labels}, labels sorted: counters and gauges by
// value, histograms by their sample count as name_count.
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
			suffix := ""
			if len(labels) > 0 {
				suffix = "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case mm.GetCounter() != nil:
				out[mf.GetName()+suffix] = mm.GetCounter().GetValue()
			case mm.GetGauge() != nil:
				out[mf.GetName()+suffix] = mm.GetGauge().GetValue()
			case mm.GetHistogram() != nil:
				out[mf.GetName()+"_count"+suffix] = float64(mm.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}
