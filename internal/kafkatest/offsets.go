package kafkatest

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// CommittedOffset is a consumer group's committed offset of one partition, with its metadata.
type CommittedOffset struct {
	Offset   int64
	Metadata string
}

// Committed returns the offsets group has committed for topic, by partition, as the broker
// has them; partitions without a commit are missing.
func (c *Cluster) Committed(t testing.TB, group, topic string) map[int32]CommittedOffset {
	t.Helper()
	cl := c.client(t)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic = topic
	for p := range int32(c.Partitions(topic)) {
		rt.Partitions = append(rt.Partitions, p)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("kafkatest: offset fetch %s/%s: %v", group, topic, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err == kerr.GroupIDNotFound {
		return map[int32]CommittedOffset{}
	} else if err != nil {
		t.Fatalf("kafkatest: offset fetch %s/%s: %v", group, topic, err)
	}
	out := map[int32]CommittedOffset{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				t.Fatalf("kafkatest: offset fetch %s/%s[%d]: %v", group, topic, rp.Partition, err)
			}
			if rp.Offset < 0 {
				continue
			}
			co := CommittedOffset{Offset: rp.Offset}
			if rp.Metadata != nil {
				co.Metadata = *rp.Metadata
			}
			out[rp.Partition] = co
		}
	}
	return out
}

// Commit commits offset with metadata for one partition on behalf of group, outside any
// generation, as an administration tool does: the group must have no active member.
func (c *Cluster) Commit(t testing.TB, group, topic string, partition int32, offset int64, metadata string) {
	t.Helper()
	// Versions of OffsetCommit before topic IDs, so that the request names the topic.
	cl := c.client(t, kgo.MaxVersions(kversion.V3_6_0()))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = group
	req.Generation = -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition = partition
	rp.Offset = offset
	rp.LeaderEpoch = -1
	rp.Metadata = &metadata
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("kafkatest: offset commit %s/%s[%d]: %v", group, topic, partition, err)
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				t.Fatalf("kafkatest: offset commit %s/%s[%d]: %v", group, topic, rp.Partition, err)
			}
		}
	}
}
