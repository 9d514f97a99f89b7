package chaos

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/examples/ov/feed"
	"github.com/streamledger/streamledger/internal/ovharness/broker"
)

// kafkaClient talks to the broker process with franz-go, so that what the harness reads never
// depends on the client the processor uses.
type kafkaClient struct {
	cl *kgo.Client
}

func newKafkaClient(addr string) (*kafkaClient, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(addr, ",")...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(2*time.Millisecond), kgo.MaxBufferedRecords(100_000))
	if err != nil {
		return nil, fmt.Errorf("chaos: kafka client: %w", err)
	}
	return &kafkaClient{cl: cl}, nil
}

func (k *kafkaClient) close() { k.cl.Close() }

// produce sends records to the partitions feed.Partition names, in order, spreading them over
// span of wall-clock time by their timestamps (span 0: as fast as possible). onSent is called
// with the index of every record handed to the client.
func (k *kafkaClient) produce(ctx context.Context, records []feed.Record, partitions int32, span time.Duration, onSent func(int)) error {
	if len(records) == 0 {
		return nil
	}
	first, last := records[0].Timestamp, records[len(records)-1].Timestamp
	feedSpan := last.Sub(first)
	start := time.Now()
	errs := make(chan error, 1)
	for i, r := range records {
		if span > 0 && feedSpan > 0 && i%64 == 0 {
			due := start.Add(time.Duration(float64(r.Timestamp.Sub(first)) / float64(feedSpan) * float64(span)))
			if d := time.Until(due); d > 0 {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(d):
				}
			}
		}
		rec := &kgo.Record{Topic: r.Topic, Partition: feed.Partition(r.Key, partitions), Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
		k.cl.Produce(ctx, rec, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
		if onSent != nil {
			onSent(i)
		}
	}
	if err := k.cl.Flush(ctx); err != nil {
		return err
	}
	select {
	case err := <-errs:
		return fmt.Errorf("chaos: producing the feed: %w", err)
	default:
		return nil
	}
}

// committed returns the group's committed offsets of topic by partition (-1 for none).
func (k *kafkaClient) committed(ctx context.Context, group, topic string, partitions int32) (map[int32]int64, error) {
	offsets, _, err := k.committedWithMetadata(ctx, group, topic, partitions)
	return offsets, err
}

// committedWithMetadata returns the group's committed offsets of topic by partition (-1 for
// none) and their metadata strings.
func (k *kafkaClient) committedWithMetadata(ctx context.Context, group, topic string, partitions int32) (map[int32]int64, map[int32]string, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic = topic
	for p := range partitions {
		rt.Partitions = append(rt.Partitions, p)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, k.cl)
	if err != nil {
		return nil, nil, err
	}
	out, meta := map[int32]int64{}, map[int32]string{}
	for p := range partitions {
		out[p] = -1
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err == kerr.GroupIDNotFound {
		return out, meta, nil
	} else if err != nil {
		return nil, nil, err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, nil, fmt.Errorf("offset fetch %s[%d]: %w", topic, p.Partition, err)
			}
			out[p.Partition] = p.Offset
			if p.Metadata != nil {
				meta[p.Partition] = *p.Metadata
			}
		}
	}
	return out, meta, nil
}

// endOffsets returns the high watermark of every partition of topic.
func (k *kafkaClient) endOffsets(ctx context.Context, topic string, partitions int32) (map[int32]int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for p := range partitions {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = p
		rp.Timestamp = -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, k.cl)
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, fmt.Errorf("list offsets %s[%d]: %w", topic, p.Partition, err)
			}
			out[p.Partition] = p.Offset
		}
	}
	return out, nil
}

// readAll reads every record of topic up to the end offsets it has when called, by partition
// then offset.
func (k *kafkaClient) readAll(ctx context.Context, addr, topic string, partitions int32) ([]*kgo.Record, error) {
	ends, err := k.endOffsets(ctx, topic, partitions)
	if err != nil {
		return nil, err
	}
	start := map[int32]kgo.Offset{}
	for p, end := range ends {
		if end > 0 {
			start[p] = kgo.NewOffset().AtStart()
		}
	}
	if len(start) == 0 {
		return nil, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(addr, ",")...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: start}))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var recs []*kgo.Record
	for len(start) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("reading %s: %w", topic, err)
		}
		var ferr error
		fs.EachError(func(_ string, p int32, err error) { ferr = fmt.Errorf("reading %s[%d]: %w", topic, p, err) })
		if ferr != nil {
			return nil, ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			end := ends[r.Partition]
			if _, ok := start[r.Partition]; !ok || r.Offset >= end {
				return
			}
			recs = append(recs, r)
			if r.Offset+1 >= end {
				delete(start, r.Partition)
			}
		})
	}
	slices.SortFunc(recs, func(a, b *kgo.Record) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
	return recs, nil
}

// deadLetters reads every record of dlq.<topic> up to its end offsets and decodes them.
func (k *kafkaClient) deadLetters(ctx context.Context, addr, topic string, partitions int32) ([]dlq.DeadLetter, []int32, error) {
	dt := dlq.DefaultTopic(topic)
	recs, err := k.readAll(ctx, addr, dt, partitions)
	if err != nil {
		return nil, nil, err
	}
	letters := make([]dlq.DeadLetter, len(recs))
	parts := make([]int32, len(recs))
	for i, r := range recs {
		hs := make([]dlq.Header, len(r.Headers))
		for j, h := range r.Headers {
			hs[j] = dlq.Header{Key: h.Key, Value: h.Value}
		}
		d, err := dlq.Decode(r.Key, r.Value, hs)
		if err != nil {
			return nil, nil, fmt.Errorf("%s[%d]@%d: %w", dt, r.Partition, r.Offset, err)
		}
		letters[i], parts[i] = d, r.Partition
	}
	return letters, parts, nil
}

// generations counts the distinct generations of group in the broker's log at path (the
// lines of broker.GenerationLine).
func generations(path, group string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("chaos: reading the broker's log: %w", err)
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		if gen, ok := broker.IsGeneration(sc.Text(), group); ok {
			seen[gen] = true
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("chaos: reading the broker's log: %w", err)
	}
	return len(seen), nil
}
