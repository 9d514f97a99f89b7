package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/examples/ov/feed"
	"github.com/streamledger/streamledger/examples/ov/pipeline"
	"github.com/streamledger/streamledger/internal/ovharness/broker"
)

// The kinds of injected faults in the table.
const (
	faultCommit    = "commit"
	faultFetch     = "fetch"
	faultDLQ       = "dlq"
	faultHeartbeat = "heartbeat"
)

// protocolFaults are the faults scenario protocol-errors injects after the dead-letter outage,
// one after the other, each until it has failed Count requests.
func protocolFaults() []struct {
	kind string
	spec broker.FaultSpec
} {
	commit := func(err string) broker.FaultSpec {
		return broker.FaultSpec{Keys: []string{"OffsetCommit"}, Group: group, Err: err, Count: 3}
	}
	fetch := func(err string) broker.FaultSpec {
		return broker.FaultSpec{Keys: []string{"Fetch"}, Topic: feed.DefaultPredictionsTopic, Err: err, Count: 5}
	}
	heartbeat := func(err string) broker.FaultSpec {
		return broker.FaultSpec{Keys: []string{"Heartbeat"}, Group: group, Err: err, Count: 1}
	}
	return []struct {
		kind string
		spec broker.FaultSpec
	}{
		{faultCommit, commit("REBALANCE_IN_PROGRESS")},
		{faultCommit, commit("COORDINATOR_NOT_AVAILABLE")},
		// Answered after the commit is applied, as a broker that timed out waiting for
		// replicas does.
		{faultCommit, commit("REQUEST_TIMED_OUT")},
		{faultFetch, fetch("NOT_LEADER_FOR_PARTITION")},
		{faultFetch, fetch("KAFKA_STORAGE_ERROR")},
		{faultFetch, fetch("UNKNOWN_SERVER_ERROR")},
		// librdkafka declares the assignment lost on either: the partitions are dropped
		// without a final write or commit, and the member rejoins.
		{faultHeartbeat, heartbeat("UNKNOWN_MEMBER_ID")},
		{faultHeartbeat, heartbeat("ILLEGAL_GENERATION")},
	}
}

// protocolErrors: two processors in one group while the broker fails requests on purpose:
// first the dead-letter producer's requests for one partition (deadLetterOutage), then offset
// commits, fetches and heartbeats (protocolFaults).
func (s *scene) protocolErrors(ctx context.Context) error {
	o := procOpts{idle: BusyIdleTimeout, wait: true}
	c, err := s.startCrew(ctx, map[string]procOpts{"a": o, "b": o})
	if err != nil {
		return err
	}
	f := s.startFeed(ctx)
	if err := s.deadLetterOutage(ctx, f.sent.Load()); err != nil {
		return err
	}
	for _, f := range protocolFaults() {
		hits, err := s.inject(ctx, f.spec, 8*time.Second)
		if err != nil {
			return err
		}
		s.res.Faults[f.kind] += hits
		s.progress("%s %s: %d of %d requests failed", f.spec.Keys[0], f.spec.Err, hits, f.spec.Count)
		if hits < f.spec.Count {
			s.note("%s %s failed %d of the %d requests meant", f.spec.Keys[0], f.spec.Err, hits, f.spec.Count)
		}
		if f.kind == faultHeartbeat {
			_ = sleep(ctx, 2*time.Second) // the lost assignment, the rejoin
		}
		if err := c.restartDied(ctx); err != nil {
			return err
		}
	}
	if err := f.wait(); err != nil {
		return err
	}
	if lost := s.countLogs(pipeline.LostMessage); lost == 0 {
		s.note("no partition was lost after the heartbeat faults")
	}
	return nil
}

// inject installs a fault, waits until it has failed spec.Count requests or wait passed, and
// removes it; it returns the requests it failed.
func (s *scene) inject(ctx context.Context, spec broker.FaultSpec, wait time.Duration) (int, error) {
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	id, err := s.admin.AddFault(actx, spec)
	cancel()
	if err != nil {
		return 0, err
	}
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if hits, err := s.faultHits(ctx, id); err == nil && hits >= spec.Count {
			break
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return 0, err
		}
	}
	actx, cancel = context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := s.admin.RemoveFault(actx, id)
	return st.Hits, err
}

// faultHits reads how many requests an installed fault has failed.
func (s *scene) faultHits(ctx context.Context, id int) (int, error) {
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	fs, err := s.admin.Faults(actx)
	if err != nil {
		return 0, err
	}
	for _, f := range fs {
		if f.ID == id {
			return f.Hits, nil
		}
	}
	return 0, fmt.Errorf("chaos: fault %d is not installed", id)
}

// nextMalformed finds the first malformed prediction of the feed after record index from: its
// partition and offset.
func (s *scene) nextMalformed(from int) (part int32, offset int64, ok bool) {
	offsets := map[int32]int64{}
	for i, r := range s.first {
		if r.Topic != feed.DefaultPredictionsTopic {
			continue
		}
		p := feed.Partition(r.Key, s.h.cfg.Size.Partitions)
		if i >= from && r.Intent == feed.Malformed {
			return p, offsets[p], true
		}
		offsets[p]++
	}
	return 0, 0, false
}

// deadLetterOutage makes the broker refuse every dead letter for one partition of
// dlq.<predictions> (INVALID_RECORD, which librdkafka does not retry: each send's delivery
// report fails) from a malformed record not yet produced, for three refusals and at least 3 s
// (the runtime sends a refused letter again after a backoff that doubles from 1 s). Meanwhile the
// source partition's committed offset must stay at or below that record's: a letter whose
// delivery failed is never acked, and nothing past it is committed. Once the fault is removed
// the letter is delivered and the commit passes it.
func (s *scene) deadLetterOutage(ctx context.Context, sent int64) error {
	topic := feed.DefaultPredictionsTopic
	part, m, ok := s.nextMalformed(int(sent) + len(s.first)/20)
	if !ok {
		s.note("dead-letter outage skipped: no malformed prediction left to produce")
		return nil
	}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	id, err := s.admin.AddFault(actx, broker.FaultSpec{Keys: []string{"Produce"}, Topic: dlq.DefaultTopic(topic),
		Partitions: []int32{part}, Err: "INVALID_RECORD", Count: -1})
	cancel()
	if err != nil {
		return err
	}
	maxCommitted := int64(-1)
	watch := func() {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if c, err := s.kc.committed(qctx, group, topic, s.h.cfg.Size.Partitions); err == nil {
			maxCommitted = max(maxCommitted, c[part])
		}
	}
	// Three refusals, over at least 3 s: the runtime's backoff (1 s, then 2 s) sends a
	// refused letter again within that.
	start := time.Now()
	for hits := 0; (hits < 3 || time.Since(start) < 3*time.Second) && time.Since(start) < 15*time.Second; {
		watch()
		hits, _ = s.faultHits(ctx, id)
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	held, heldMax := time.Since(start), maxCommitted
	actx, cancel = context.WithTimeout(ctx, 5*time.Second)
	st, err := s.admin.RemoveFault(actx, id)
	cancel()
	if err != nil {
		return err
	}
	s.res.Faults[faultDLQ] += st.Hits
	passed := time.Duration(-1)
	for t0 := time.Now(); time.Since(t0) < 30*time.Second; {
		if watch(); maxCommitted > m {
			passed = time.Since(t0)
			break
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	return s.judgeOutage(topic, part, m, st.Hits, held, passed, heldMax)
}

// judgeOutage records what the dead-letter outage showed: heldMax is the highest committed
// offset of the partition while its letters were refused.
func (s *scene) judgeOutage(topic string, part int32, m int64, hits int, held, passed time.Duration, heldMax int64) error {
	src := fmt.Sprintf("%s[%d]", topic, part)
	if heldMax > m {
		s.res.Mismatched++
		s.res.Mismatches = append(s.res.Mismatches, fmt.Sprintf("%s committed %d while the dead letter of offset %d was refused",
			src, heldMax, m))
	}
	if hits == 0 {
		s.note("dead-letter outage of %s: no letter reached the broker in %v (from offset %d)", src, held.Round(time.Millisecond), m)
		return nil
	}
	if passed < 0 {
		return fmt.Errorf("chaos: %s's commit never passed offset %d after its dead letters were accepted again", src, m)
	}
	s.note("dead letters of %s refused %d times over %v (INVALID_RECORD, from the malformed record at offset %d on): "+
		"its committed offset stayed at %d (at most %d); %v after the broker accepted them again it passed it", src, hits,
		held.Round(time.Millisecond), m, heldMax, m, passed.Round(time.Millisecond))
	return nil
}
