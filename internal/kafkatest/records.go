package kafkatest

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteRecords deletes the records of topic's partition below offset before, as retention
// does: the partition's log start moves to before. It is the DeleteRecords request that
// franz-go's kadm.Client.DeleteRecords sends; the broker's answer must be a success.
func (c *Cluster) DeleteRecords(t testing.TB, topic string, partition int32, before int64) {
	t.Helper()
	cl := c.client(t)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = int32(Timeout.Milliseconds())
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = partition, before
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("kafkatest: delete records of %s/%d below %d: %v", topic, partition, before, err)
	}
	for _, st := range resp.Topics {
		for _, sp := range st.Partitions {
			if err := kerr.ErrorForCode(sp.ErrorCode); err != nil {
				t.Fatalf("kafkatest: delete records of %s/%d below %d: %v", topic, partition, before, err)
			}
			if sp.LowWatermark != before {
				t.Fatalf("kafkatest: delete records of %s/%d below %d: the log starts at %d", topic, partition, before, sp.LowWatermark)
			}
		}
	}
}

// LogStart returns the log start offset of topic's partition, or -1 if it does not exist.
func (c *Cluster) LogStart(topic string, partition int32) int64 {
	for _, pi := range c.PartitionInfos(topic) {
		if pi.Partition == partition {
			return pi.LogStartOffset
		}
	}
	return -1
}
