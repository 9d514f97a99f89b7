package figures_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/streamledger/streamledger/internal/ovharness/figures"
	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/ledger/consumer"
)

func TestSnapshot(t *testing.T) {
	f := figures.New()
	p0 := ledger.TopicPartition{Topic: "pred", Partition: 0}
	p1 := ledger.TopicPartition{Topic: "pred", Partition: 1}
	var wg sync.WaitGroup
	for _, o := range []consumer.Decision{consumer.Admitted, consumer.Admitted, consumer.Late, consumer.DeadLettered} {
		wg.Go(func() { f.OnMessage(consumer.MessageInfo{TopicPartition: p0, Decision: o}) }) // as the workers do
	}
	wg.Wait()
	f.OnDeadLetter(consumer.DeadLetterInfo{TopicPartition: p0})
	f.OnDeadLetter(consumer.DeadLetterInfo{TopicPartition: p0, Err: errors.New("broker down")})
	f.OnWrite(consumer.WriteInfo{Kind: consumer.WriteClose, Source: p0, Rows: 40})
	f.OnWrite(consumer.WriteInfo{Kind: consumer.WriteState, Rows: 7})
	f.OnWrite(consumer.WriteInfo{Kind: consumer.WriteState, Rows: 9, Err: errors.New("db down")})
	f.OnCommit(consumer.CommitInfo{Commits: []ledger.Commit{{TopicPartition: p0, Offset: 10}, {TopicPartition: p1, Offset: 5}}})
	f.OnCommit(consumer.CommitInfo{Commits: []ledger.Commit{{TopicPartition: p0, Offset: 12}, {TopicPartition: p1, Offset: 9}},
		Failed: []ledger.Commit{{TopicPartition: p1, Offset: 9}}})
	f.OnCommit(consumer.CommitInfo{Commits: []ledger.Commit{{TopicPartition: p0, Offset: 20}}, Err: errors.New("rebalancing")})
	f.OnPartition(consumer.PartitionInfo{TopicPartition: p0, Lag: 3})
	f.OnPartition(consumer.PartitionInfo{TopicPartition: p1, Lag: 4})
	f.OnTick(consumer.TickInfo{Partitions: 2, Pending: 17, OpenKeys: 6994, MinWatermark: time.Unix(1500, 0)})
	assert.Equal(t, figures.Snapshot{Consumed: 4, Admitted: 2, Late: 1, DeadLettered: 1, Lag: 7, Pending: 17, OpenKeys: 6994,
		Committed: 12 + 5, Commits: 2, StateRows: 7, Partials: 40, DeadLettersDelivered: 1, MinWatermark: time.Unix(1500, 0),
		Partitions: 2}, f.Snapshot())

	f.OnRevoke(consumer.RevokeInfo{TopicPartition: p1})
	f.OnPartition(consumer.PartitionInfo{TopicPartition: p0, Lag: -1})
	f.OnTick(consumer.TickInfo{Partitions: 1})
	assert.Equal(t, int64(-1), f.Snapshot().Lag, "unknown while a partition's lag is")
}
