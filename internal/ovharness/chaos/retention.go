package chaos

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/examples/ov/feed"
	"github.com/streamledger/streamledger/internal/ovharness/oracle"
)

// retentionPartitions is how many partitions of the positions topic the retention scenario
// truncates.
const retentionPartitions = 3

// lostLine is what the consumer logs for each lost range.
const lostLine = `msg="records lost before they were read`

// retention: a processor consumes the first half of the feed and stops gracefully; the second
// half is produced while none runs, and DeleteRecords moves the log start of some positions
// partitions past the group's committed offsets, to the middle of what they did not read, as
// retention does to a group that is stopped or far behind. A processor started then (with
// --lost-records continue, as every processor of the scenario) finds each lost range at
// assignment, dead-letters it and goes on from the log start. The oracle leaves out exactly the
// deleted ranges, and the lost letters' ranges must equal them.
//
// Only positions partitions whose committed offset reached their end when the first processor
// stopped are truncated: their records carry state rows alone, which a graceful stop flushes
// and commits, so nothing of a deleted range was ever decided and the deleted range is
// exactly what no processor read. A prediction partition's commit waits for its open windows,
// so a range deleted from its committed offset would hold records that were decided and partly
// written.
func (s *scene) retention(ctx context.Context) error {
	o := procOpts{idle: BusyIdleTimeout, wait: true}
	p, err := s.startProc(ctx, "p", o)
	if err != nil {
		return err
	}
	if err := <-s.produce(ctx, nil); err != nil {
		return err
	}
	if err := sleep(ctx, time.Second); err != nil {
		return err
	}
	if !p.term(45 * time.Second) {
		desc, _ := p.exit()
		return fmt.Errorf("chaos: retention: the first processor did not stop gracefully: %s", desc)
	}
	topic := feed.DefaultPositionsTopic
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	committed, err := s.kc.committed(qctx, group, topic, s.h.cfg.Size.Partitions)
	if err != nil {
		return err
	}
	firstEnds, err := s.kc.endOffsets(qctx, topic, s.h.cfg.Size.Partitions)
	if err != nil {
		return err
	}
	if err := s.kc.produce(ctx, s.later, s.h.cfg.Size.Partitions, 0, nil); err != nil {
		return err
	}
	ends, err := s.kc.endOffsets(qctx, topic, s.h.cfg.Size.Partitions)
	if err != nil {
		return err
	}
	var deleted int64
	for part := range s.h.cfg.Size.Partitions {
		c := committed[part]
		if len(s.lost) == retentionPartitions || c < 0 || c != firstEnds[part] || ends[part]-c < 2 {
			continue
		}
		to := c + (ends[part]-c)/2
		if err := s.kc.deleteRecords(qctx, topic, part, to); err != nil {
			return err
		}
		s.lost = append(s.lost, oracle.LostRange{Source: oracle.Source{Topic: topic, Partition: part}, From: c, To: to})
		deleted += to - c
	}
	if len(s.lost) == 0 {
		return fmt.Errorf("chaos: retention: no positions partition was committed through its end (committed %v, ends %v)",
			committed, firstEnds)
	}
	s.res.Faults["deleted"] = int(deleted)
	s.ocfg.Lost = s.lost
	if s.oracle, err = oracle.Compute(s.ocfg, s.records); err != nil {
		return err
	}
	s.note("DeleteRecords removed %d unread records while no processor ran: %s", deleted, formatRanges(s.lost))
	q, err := s.startProc(ctx, "q", o)
	if err != nil {
		return err
	}
	// It reports the ranges at assignment; the drain's processor then reads the rest.
	deadline := time.Now().Add(30 * time.Second)
	for s.lostLogLines() < len(s.lost) && time.Now().Before(deadline) && q.running() {
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// lostLogLines counts the lost ranges the processors logged.
func (s *scene) lostLogLines() int {
	files, _ := filepath.Glob(filepath.Join(s.logDir, "processor-*.log"))
	n := 0
	for _, f := range files {
		n += countLines(f, lostLine)
	}
	return n
}

// checkLost takes the letters of lost ranges out of letters and compares their distinct
// ranges with the ranges the scenario deleted; it returns the other letters and the
// mismatches.
func (s *scene) checkLost(letters []dlq.DeadLetter, parts []int32) ([]dlq.DeadLetter, []int32, []string) {
	var rest []dlq.DeadLetter
	var restParts []int32
	got := map[oracle.LostRange]bool{}
	copies := 0
	for i, d := range letters {
		if d.ErrorClass != dlq.ClassLost {
			rest, restParts = append(rest, d), append(restParts, parts[i])
			continue
		}
		r := oracle.LostRange{Source: oracle.Source{Topic: d.Topic, Partition: d.Partition}, From: d.Offset, To: d.LostEnd}
		if got[r] {
			copies++
		}
		got[r] = true
	}
	var mism []string
	want := map[oracle.LostRange]bool{}
	for _, r := range s.lost {
		want[r] = true
		if !got[r] {
			mism = append(mism, fmt.Sprintf("lost: the range %s [%d, %d) was deleted and no lost letter reports it", r.Source, r.From, r.To))
		}
	}
	for r := range got {
		if !want[r] {
			mism = append(mism, fmt.Sprintf("lost: a letter reports %s [%d, %d), which was not deleted", r.Source, r.From, r.To))
		}
	}
	if len(s.lost) > 0 || len(got) > 0 {
		s.note("lost letters report %d ranges (%d redelivered copies), %d logged at ERROR; deleted: %s", len(got), copies,
			s.lostLogLines(), formatRanges(s.lost))
	}
	return rest, restParts, mism
}

// lostOffsets counts the offsets of the scenario's lost ranges, and the malformed records
// among them.
func (s *scene) lostOffsets() (offsets, malformed int64) {
	for _, r := range s.lost {
		offsets += r.To - r.From
	}
	next := map[oracle.Source]int64{}
	for _, rec := range s.records {
		src := oracle.Source{Topic: rec.Topic, Partition: feed.Partition(rec.Key, s.h.cfg.Size.Partitions)}
		off := next[src]
		next[src]++
		if rec.Intent != feed.Malformed {
			continue
		}
		for _, r := range s.lost {
			if r.Source == src && off >= r.From && off < r.To {
				malformed++
			}
		}
	}
	return offsets, malformed
}

func formatRanges(rs []oracle.LostRange) string {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b oracle.LostRange) int {
		return cmp.Or(cmp.Compare(a.Source.Topic, b.Source.Topic), cmp.Compare(a.Source.Partition, b.Source.Partition))
	})
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = fmt.Sprintf("%s [%d, %d)", r.Source, r.From, r.To)
	}
	return strings.Join(out, ", ")
}

// deleteRecords deletes the records of topic's partition below offset before, as retention
// does: DeleteRecords, the request franz-go's kadm.Client.DeleteRecords sends.
func (k *kafkaClient) deleteRecords(ctx context.Context, topic string, partition int32, before int64) error {
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = 10_000
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = partition, before
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, k.cl)
	if err != nil {
		return fmt.Errorf("chaos: delete records of %s[%d] below %d: %w", topic, partition, before, err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("chaos: delete records of %s[%d] below %d: %w", topic, partition, before, err)
			}
		}
	}
	return nil
}
