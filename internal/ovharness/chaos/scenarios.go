package chaos

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"time"

	"github.com/streamledger/streamledger/examples/ov/feed"
	"github.com/streamledger/streamledger/internal/ovharness/killpoints"
	"github.com/streamledger/streamledger/internal/ovharness/oracle"
	"github.com/streamledger/streamledger/internal/ovharness/verify"
	"github.com/streamledger/streamledger/ledger"
)

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// restartIfDied notes and restarts a processor that exited without being asked to.
func (s *scene) restartIfDied(ctx context.Context, p *proc, o procOpts) (*proc, error) {
	if p == nil || p.running() {
		return p, nil
	}
	if desc, unexpected := p.exit(); unexpected {
		s.note("processor %s exited on its own (%s); restarted", p.name, desc)
	}
	return s.startProc(ctx, p.name, o)
}

// killStatic is the group.instance.id of the kill scenario's processor: each restart replaces
// the killed member at once (static membership), so the scenario measures recovery, not the
// group's wait for a dead member (the group scenarios have that).
const killStatic = "chaos-kill"

// kills: one processor, killed with SIGKILL at random instants of its life (Size.KillAfter
// after its start: during start-up, migration, group join, replay or steady consumption),
// and restarted, while the feed is produced.
func (s *scene) kills(ctx context.Context) error {
	produced := s.produce(ctx, nil)
	var prodErr error
	prodDone := false
	o := procOpts{idle: BusyIdleTimeout, static: killStatic}
	for s.res.Kills < s.h.cfg.Size.Kills || !prodDone {
		if s.res.Kills >= s.h.cfg.Size.Kills {
			prodErr, prodDone = <-produced, true
			break
		}
		p, err := s.startProc(ctx, "p", o)
		if err != nil {
			return err
		}
		if err := sleep(ctx, s.h.randDur(s.h.cfg.Size.KillAfter[0], s.h.cfg.Size.KillAfter[1])); err != nil {
			return err
		}
		if p.running() {
			p.kill()
			s.res.Kills++
		} else {
			desc, _ := p.exit()
			s.note("processor exited before its kill: %s", desc)
		}
		select {
		case prodErr = <-produced:
			prodDone = true
		default:
		}
	}
	if prodErr != nil {
		return prodErr
	}
	s.progress("%d kills", s.res.Kills)
	return nil
}

// group: three processors in one group; joins, graceful leaves and kills at random instants
// while the feed is produced. Each membership change causes a rebalance (a kill's after the
// session timeout). A change that comes during a rebalance joins it, and under kfake each one
// also restarts the rebalance's timer, so changes faster than the group settles keep it
// rebalancing for as long as they last, with nobody consuming. So after each change the
// scenario waits (at most settleTimeout) for the broker to form the next generation, and it
// goes on until the broker has formed Size.GroupRebalances generations too (within three
// times the planned changes).
func (s *scene) group(ctx context.Context, assignor string) error {
	feed := s.startFeed(ctx)
	o := procOpts{idle: BusyIdleTimeout, assignor: assignor, wait: true}
	members := map[string]*proc{}
	p, err := s.startProc(ctx, "a", o)
	if err != nil {
		return err
	}
	members["a"] = p
	changes, unsettled := 0, 0
	for !s.groupChanged(changes) || !feed.done {
		if s.groupChanged(changes) {
			break
		}
		if err := sleep(ctx, s.h.randDur(300*time.Millisecond, 1500*time.Millisecond)); err != nil {
			return err
		}
		gen, _ := generations(s.brokerLog(), group)
		if err := s.groupChange(ctx, members, o); err != nil {
			return err
		}
		changes++
		settled, err := s.settle(ctx, gen)
		if err != nil {
			return err
		}
		if !settled {
			unsettled++
		}
		feed.finished()
	}
	if err := feed.wait(); err != nil {
		return err
	}
	s.progress("%d membership changes (%d kills) with %s", changes, s.res.Kills, cmp.Or(assignor, "the broker's assignor"))
	s.note("%d membership changes (%d of them kills); %d not followed by a new generation within %v", changes, s.res.Kills,
		unsettled, settleTimeout)
	return nil
}

// groupChanged reports whether the group scenario made enough membership changes: the
// planned number, and either the broker formed the planned generations or three times the
// planned changes were made.
func (s *scene) groupChanged(changes int) bool {
	if changes < s.h.cfg.Size.GroupChanges {
		return false
	}
	gens, err := generations(s.brokerLog(), group)
	return err != nil || gens >= s.h.cfg.Size.GroupRebalances || changes >= 3*s.h.cfg.Size.GroupChanges
}

// groupNames are the processors of the group scenario.
var groupNames = []string{"a", "b", "c"}

// groupChange makes one membership change at random: a stopped processor joins (started with
// o; twice as likely as either other change), a running one leaves gracefully, or one is
// killed. The last running member stays until another has joined: emptying the group forms no
// generation (nobody is left to sync one).
func (s *scene) groupChange(ctx context.Context, members map[string]*proc, o procOpts) error {
	var running, stopped []string
	for _, n := range groupNames {
		if m := members[n]; m != nil && m.running() {
			running = append(running, n)
		} else {
			if m != nil {
				if desc, unexpected := m.exit(); unexpected {
					s.note("processor %s exited on its own: %s", n, desc)
				}
			}
			stopped = append(stopped, n)
		}
	}
	action := s.h.randN(4) // 0, 1: join; 2: leave; 3: kill
	switch {
	case len(running) <= 1:
		action = 0
	case len(stopped) == 0:
		action = 2 + s.h.randN(2)
	}
	switch action {
	case 0, 1:
		n := stopped[s.h.randN(len(stopped))]
		var err error
		if members[n], err = s.startProc(ctx, n, o); err != nil {
			return err
		}
	case 2:
		members[running[s.h.randN(len(running))]].term(45 * time.Second)
	case 3:
		members[running[s.h.randN(len(running))]].kill()
		s.res.Kills++
	}
	return nil
}

// settleTimeout bounds the wait for a membership change's rebalance: a kill's starts after
// the session timeout (6 s), and a member that dies during it holds it for the rebalance
// timeout (10 s).
const settleTimeout = 12 * time.Second

// settle waits until the broker has formed a generation after the first gen, or
// settleTimeout passed (settled false).
func (s *scene) settle(ctx context.Context, gen int) (settled bool, err error) {
	deadline := time.Now().Add(settleTimeout)
	for time.Now().Before(deadline) {
		if n, err := generations(s.brokerLog(), group); err != nil || n > gen {
			return true, nil
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return false, err
		}
	}
	return false, nil
}

// postgres: one processor while its Postgres connections are terminated repeatedly
// (pg_terminate_backend of every backend with its application_name), and, in the full run,
// the server stopped for five seconds and started again.
func (s *scene) postgres(ctx context.Context) error {
	o := procOpts{idle: BusyIdleTimeout, wait: true}
	p, err := s.startProc(ctx, "p", o)
	if err != nil {
		return err
	}
	var sent atomic.Int64
	produced := s.produce(ctx, func(i int) { sent.Store(int64(i + 1)) })
	var prodErr error
	prodDone, restarted := false, !s.h.cfg.Size.RestartPostgres
	rounds, terminated := 0, 0
	for rounds < s.h.cfg.Size.Terminations || !prodDone || !restarted {
		if err := sleep(ctx, s.h.randDur(200*time.Millisecond, 700*time.Millisecond)); err != nil {
			return err
		}
		if !restarted && sent.Load() > int64(len(s.records))*2/5 {
			restarted = true
			s.progress("stopping the Postgres server")
			if err := s.h.cfg.PostgresCluster(ctx, "stop"); err != nil {
				return fmt.Errorf("chaos: stopping postgres: %w", err)
			}
			_ = sleep(ctx, 5*time.Second)
			if err := s.h.cfg.PostgresCluster(ctx, "start"); err != nil {
				return fmt.Errorf("chaos: starting postgres: %w", err)
			}
			s.res.Outages++
			s.note("Postgres server stopped for 5 s and started again at %d of %d records produced", sent.Load(), len(s.records))
			continue
		}
		if rounds < s.h.cfg.Size.Terminations || !prodDone {
			n, err := s.terminate(ctx)
			if err == nil && n > 0 {
				rounds++
				terminated += n
				s.res.Outages++
			}
		}
		if p, err = s.restartIfDied(ctx, p, o); err != nil {
			return err
		}
		if !prodDone {
			select {
			case prodErr = <-produced:
				prodDone = true
			default:
			}
		}
	}
	if prodErr != nil {
		return prodErr
	}
	s.note("%d rounds of pg_terminate_backend ended %d backends of the processor", rounds, terminated)
	return nil
}

// terminate ends every backend of the scenario's processors.
func (s *scene) terminate(ctx context.Context) (int, error) {
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var n int
	err := s.h.pool.QueryRow(qctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = $1 AND pid <> pg_backend_pid()`, s.appName).Scan(&n)
	return n, err
}

// idle: partition 0 of both topics receives nothing in the second half of the feed while the
// others go on. The others must keep committing, the ledger and the open windows stay
// bounded, and partition 0's windows close after the idle timeout, while the feed is still
// being produced. Then the harness freezes partition 0's idle advance (it stops the processor
// gracefully), reads it back as the next owner will restore it, gives it to the oracle, and
// produces the rest: partition 0's withheld records, whose predictions for windows the advance
// closed are late, and every partition's tail of delayed predictions.
func (s *scene) idle(ctx context.Context) error {
	o := procOpts{idle: IdleScenarioTimeout, wait: true}
	p, err := s.startProc(ctx, "p", o)
	if err != nil {
		return err
	}
	silent := oracle.Source{Topic: feed.DefaultPredictionsTopic, Partition: 0}
	next, lastBy := s.firstPredictions()
	last := lastBy[0]
	size := s.h.cfg.Size.Feed.WindowSize
	target := last.Truncate(size).Add(size) // the end of the last window holding an event of P0
	var sent atomic.Int64
	produced := s.produce(ctx, func(i int) { sent.Store(int64(i + 1)) })
	var closedAt time.Time
	var before map[int32]int64
	var prodErr error
	for {
		select {
		case prodErr = <-produced:
		case <-time.After(200 * time.Millisecond):
			if !closedAt.IsZero() {
				continue
			}
			closed, err := verify.ClosedThrough(ctx, s.h.pool, s.schema, s.oracle)
			if err != nil || closed[silent].Before(target) {
				continue
			}
			closedAt = time.Now()
			qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			before, err = s.kc.committed(qctx, group, feed.DefaultPredictionsTopic, s.h.cfg.Size.Partitions)
			cancel()
			if err != nil {
				return err
			}
			s.note("partition %s went quiet after its last event at %s; its windows closed through %s while %d of %d records "+
				"were produced", silent, last.Format(time.TimeOnly), closed[silent].Format(time.TimeOnly), sent.Load(), len(s.first))
			continue
		}
		break
	}
	if prodErr != nil {
		return prodErr
	}
	if p.running() {
		// Let the others catch up before reading their commits, so that "kept committing" is
		// about the time P0 was idle.
		_ = sleep(ctx, time.Second)
	}
	if closedAt.IsZero() {
		s.res.Mismatched++
		s.res.Mismatches = append(s.res.Mismatches, fmt.Sprintf("idle: %s never closed through %s while the feed was produced", silent, target))
	} else if err := s.keptCommitting(ctx, before); err != nil {
		return err
	}
	s.checkBounds()
	if err := s.freezeAdvance(ctx, p, next, lastBy); err != nil {
		return err
	}
	// Nothing consumes while the rest is produced: the drain's processor reads it all, and a
	// partition with unread records is never idle, so no other advance decides any of it.
	if err := s.kc.produce(ctx, s.later, s.h.cfg.Size.Partitions, 0, nil); err != nil {
		return err
	}
	return nil
}

// firstPredictions returns, per partition of the predictions topic, how many records the
// scenario's first part holds (the offset of its first record of the second part) and the
// latest event time among them.
func (s *scene) firstPredictions() (next map[int32]int64, last map[int32]time.Time) {
	next, last = map[int32]int64{}, map[int32]time.Time{}
	for _, r := range s.first {
		if r.Topic != feed.DefaultPredictionsTopic {
			continue
		}
		part := feed.Partition(r.Key, s.h.cfg.Size.Partitions)
		next[part]++
		if pr, err := s.ocfg.Decoder.DecodePrediction(r.Value, r.Timestamp); err == nil && pr.ObservedAt.After(last[part]) {
			last[part] = pr.ObservedAt
		}
	}
	return next, last
}

// keptCommitting checks that other prediction partitions committed further after partition 0
// closed (before: their commits then).
func (s *scene) keptCommitting(ctx context.Context, before map[int32]int64) error {
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	after, err := s.kc.committed(qctx, group, feed.DefaultPredictionsTopic, s.h.cfg.Size.Partitions)
	cancel()
	if err != nil {
		return err
	}
	moved := 0
	for part := int32(1); part < s.h.cfg.Size.Partitions; part++ {
		if after[part] > before[part] {
			moved++
		}
	}
	s.note("after partition 0 closed, %d of %d other prediction partitions committed further", moved, s.h.cfg.Size.Partitions-1)
	if moved == 0 {
		s.res.Err = fmt.Errorf("idle: no other partition committed after partition 0 went idle")
	}
	return nil
}

// checkBounds checks the ledger and the open windows while partition 0 was idle.
func (s *scene) checkBounds() {
	// Bounded: what a stuck commit would accumulate is everything after partition 0 went
	// quiet (half the feed); the ledger may hold at most the records of the busiest stretch of
	// window + lateness + disorder + two ticks' worth of feed time.
	bound := busiest(s.first, s.h.cfg.Size.Feed.WindowSize+s.h.cfg.Size.Feed.Lateness+feed.DefaultMaxDisorder+
		time.Duration(2*float64(FlushInterval)*s.feedSpeed()))
	if u := s.g.uncommitted.Load(); u > int64(bound) {
		s.res.Err = fmt.Errorf("idle: the ledger held %d uncommitted messages, above the bound %d", u, bound)
	}
	if ow := s.g.openWindows.Load(); ow > int64(2*s.oracle.MaxOpenPartials) {
		s.res.Err = fmt.Errorf("idle: %d open windows, above twice the oracle's %d", ow, s.oracle.MaxOpenPartials)
	}
	s.note("bounded while partition 0 was idle: at most %d uncommitted messages (bound %d) and %d open (window, key) aggregates (the oracle's peak: %d)",
		s.g.uncommitted.Load(), bound, s.g.openWindows.Load(), s.oracle.MaxOpenPartials)
}

// freezeAdvance ends the idle advances and hands them to the oracle. An idle partition's
// watermark keeps pace with the processor's clock until its next record arrives, so the
// advance that will decide that record is only known once no processor owns the partition:
// the processor is stopped gracefully (its last close batch writes the last advance, its final
// commit carries it), and the watermark of every prediction partition is read back as the
// next owner restores it, max(watermark in the commit metadata, closed_through). The oracle
// applies each before the partition's first record of the second part (next). For partition
// 0 that is its idle advance; for the others it is at most the watermark of their own data,
// which changes nothing, unless one went idle too in the moment between the end of the first
// part and the stop: then the oracle knows that advance as well.
func (s *scene) freezeAdvance(ctx context.Context, p *proc, next map[int32]int64, last map[int32]time.Time) error {
	if !p.term(45 * time.Second) {
		desc, _ := p.exit()
		s.note("the processor did not stop gracefully before the rest was produced: %s", desc)
	}
	closed, err := verify.ClosedThrough(ctx, s.h.pool, s.schema, s.oracle)
	if err != nil {
		return err
	}
	topic := feed.DefaultPredictionsTopic
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	offsets, meta, err := s.kc.committedWithMetadata(qctx, group, topic, s.h.cfg.Size.Partitions)
	cancel()
	if err != nil {
		return err
	}
	lateness := s.h.cfg.Size.Feed.Lateness
	var advances []oracle.Advance
	var othersIdle []string
	for part := range s.h.cfg.Size.Partitions {
		src := oracle.Source{Topic: topic, Partition: part}
		wm := closed[src]
		if cp, err := ledger.DecodeMetadata(meta[part]); err != nil {
			s.note("partition %s's commit metadata %q: %v", src, meta[part], err)
		} else if cp.Watermark.After(wm) {
			wm = cp.Watermark
		}
		if wm.IsZero() {
			continue // nothing restores a watermark: the next owner starts from its data
		}
		advances = append(advances, oracle.Advance{Source: src, Offset: next[part], Watermark: wm})
		if part != 0 && wm.After(last[part].Add(-lateness)) {
			othersIdle = append(othersIdle, fmt.Sprintf("%s to %s", src, wm.Format(time.TimeOnly)))
		}
	}
	silent := oracle.Source{Topic: topic, Partition: 0}
	var wm time.Time
	for _, a := range advances {
		if a.Source == silent {
			wm = a.Watermark
		}
	}
	if wm.IsZero() {
		return fmt.Errorf("idle: partition %s has neither progress nor commit metadata after its processor stopped", silent)
	}
	cfg := s.ocfg
	cfg.Advances = advances
	or, err := oracle.Compute(cfg, s.records)
	if err != nil {
		return err
	}
	var withheld int64
	for _, r := range s.later {
		if r.Topic == topic && feed.Partition(r.Key, s.h.cfg.Size.Partitions) == 0 {
			withheld++
		}
	}
	byAdvance := or.Partitions[silent].Late - s.oracle.Partitions[silent].Late
	s.oracle = or
	s.note("partition %s's advance frozen at %s (its data's watermark %s, closed_through %s, committed offset %d of %d with %q); "+
		"applied before offset %d: %d of its %d later records are late, %d of them by the advance",
		silent, wm.Format(time.TimeOnly), last[0].Add(-lateness).Format(time.TimeOnly), closed[silent].Format(time.TimeOnly),
		offsets[0], next[0], meta[0], next[0], or.Partitions[silent].Late-lateBefore(or, silent, next[0]), withheld, byAdvance)
	if len(othersIdle) > 0 {
		s.note("other partitions went idle before the stop, their advances given to the oracle too: %s", strings.Join(othersIdle, ", "))
	}
	if !wm.After(last[0].Add(-lateness)) {
		s.res.Err = fmt.Errorf("idle: partition %s's watermark %s did not move past its data's %s: no idle advance", silent, wm,
			last[0].Add(-lateness))
	} else if byAdvance <= 0 {
		s.res.Err = fmt.Errorf("idle: the advance of %s to %s made none of its later predictions late: nothing was tested", silent, wm)
	}
	return nil
}

// lateBefore counts the late records of src below offset off.
func lateBefore(r *oracle.Result, src oracle.Source, off int64) int64 {
	var n int64
	for _, l := range r.Late {
		if l.Source == src && l.Offset < off {
			n++
		}
	}
	return n
}

// feedSpeed is simulated time per wall-clock time while producing the (first part of the)
// feed.
func (s *scene) feedSpeed() float64 {
	if len(s.first) == 0 || s.h.cfg.Size.Span <= 0 {
		return 1
	}
	return float64(s.first[len(s.first)-1].Timestamp.Sub(s.first[0].Timestamp)) / float64(s.h.cfg.Size.Span)
}

// busiest returns the largest number of records whose timestamps fall within d of each other.
func busiest(records []feed.Record, d time.Duration) int {
	best, lo := 0, 0
	for hi := range records {
		for records[hi].Timestamp.Sub(records[lo].Timestamp) > d {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}

// faultStatic is the group.instance.id of the fault-points scenario's armed processor, so that
// its restart replaces it at once.
const faultStatic = "chaos-fault"

// faultPoints: a processor armed (by $OV_FAULT) to kill itself at the Nth occurrence of a
// point inside the process: right after a close batch committed in Postgres and before the
// offsets are committed; right after a dead letter was handed to the producer and before its
// delivery report; right after the positive report and before the ledger's ack and commit;
// and during a revocation (a second processor joins): right after one of the revoke's close
// batches with partials committed in Postgres and before its final offset commit, or after
// that commit and before the partitions are handed over. Restarted each time, while the feed
// is produced.
func (s *scene) faultPoints(ctx context.Context) error {
	feed := s.startFeed(ctx)
	// Revocation points alternate with the others, so that both come before the feed is used up.
	points := []string{killpoints.CloseWritten, killpoints.RevokeWritten, killpoints.DLQSent, killpoints.RevokeCommitted, killpoints.DLQReported}
	// A revocation writes the windows that closed since the last tick. With ticks much shorter
	// than a window's span of wall time (the window at the feed's speed) that is often none,
	// so the processor armed for revoke-written ticks less often than a window passes: its
	// revocation then always has closed partials (and state rows) to write.
	revokeFlush := s.holdingFlush()
	fired := map[string]int{}
	for i := 0; (s.res.Kills < s.h.cfg.Size.FaultKills || !feed.done) && i < 4*s.h.cfg.Size.FaultKills; i++ {
		if s.res.Kills >= s.h.cfg.Size.FaultKills {
			break
		}
		point := points[i%len(points)]
		stop, err := s.faultLife(ctx, point, revokeFlush, feed.done, fired)
		if err != nil {
			return err
		}
		if stop {
			break
		}
		feed.finished()
	}
	if err := feed.wait(); err != nil {
		return err
	}
	s.note("fault points fired: %v (revoke-written armed with a %v flush interval)", fired, revokeFlush.Round(time.Millisecond))
	for _, pt := range points {
		if fired[pt] == 0 {
			s.note("fault point %s never fired", pt)
		}
	}
	return nil
}

// faultLife runs one life of a processor armed to kill itself at the Nth occurrence of point
// (N at random; a revoke-written processor ticks every revokeFlush) and counts the kill in
// fired. For a revocation point a second processor joins and leaves meanwhile. It returns stop
// when the point was not reached although the whole feed was produced (feedDone): the input
// that could reach it (new dead letters, new windows) is used up, so more lives would only
// wait.
func (s *scene) faultLife(ctx context.Context, point string, revokeFlush time.Duration, feedDone bool, fired map[string]int) (stop bool, err error) {
	revoke := point == killpoints.RevokeWritten || point == killpoints.RevokeCommitted
	o := procOpts{idle: BusyIdleTimeout, wait: true, static: faultStatic}
	n := 1 + s.h.randN(5)
	switch point {
	case killpoints.RevokeCommitted:
		n = 1 // one revocation per lifetime
	case killpoints.RevokeWritten:
		n = 1 + s.h.randN(3) // the first, second or third partition's batch of the revocation
		o.flush = revokeFlush
	}
	o.fault = fmt.Sprintf("%s:%d", point, n)
	p, err := s.startProc(ctx, "a", o)
	if err != nil {
		return false, err
	}
	var b *proc
	if revoke {
		if b, err = s.revocations(ctx, p); err != nil {
			return false, err
		}
	} else if err := waitExit(ctx, p, 8*time.Second); err != nil {
		return false, err
	}
	switch {
	case p.selfKilled():
		s.res.Kills++
		fired[point]++
	case p.running():
		p.term(45 * time.Second)
		if feedDone {
			s.note("fault point %s not reached after the feed was produced; stopping", o.fault)
			stop = true
		}
	default:
		desc, _ := p.exit()
		s.note("processor armed with %s exited otherwise: %s", o.fault, desc)
	}
	if b != nil {
		b.term(45 * time.Second)
	}
	return stop, nil
}

// revocations lets a second processor join and then leave, twice at most while the armed
// processor p runs: each is a revocation of p's partitions (all of them under the default,
// eager, assignor), and one whose closed windows happen to be written already has no partials
// to write. It returns the last second processor.
func (s *scene) revocations(ctx context.Context, p *proc) (*proc, error) {
	_ = sleep(ctx, s.h.randDur(300*time.Millisecond, 1000*time.Millisecond))
	var b *proc
	for round := 0; round < 2 && p.running(); round++ {
		var err error
		if b, err = s.startProc(ctx, "b", procOpts{idle: BusyIdleTimeout, wait: true}); err != nil {
			return nil, err
		}
		if err := waitExit(ctx, p, 3*time.Second); err != nil {
			return nil, err
		}
		b.term(45 * time.Second)
		if err := waitExit(ctx, p, 3*time.Second); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// holdingFlush is a flush interval longer than two windows' worth of wall time at the feed's
// speed: a processor that ticks this rarely holds closed windows not yet written most of the
// time.
func (s *scene) holdingFlush() time.Duration {
	return max(FlushInterval, time.Duration(float64(s.h.cfg.Size.Feed.WindowSize)/s.feedSpeed()*2))
}

// waitExit waits until p exits or d passes.
func waitExit(ctx context.Context, p *proc, d time.Duration) error {
	select {
	case <-p.done:
	case <-time.After(d):
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// Cluster returns a PostgresCluster that stops and starts a Debian-style cluster with
// pg_ctlcluster: version/name, such as "15/chaos"; an empty spec means the "main" cluster of
// the only version in /etc/postgresql.
func Cluster(spec string) (func(ctx context.Context, action string) error, error) {
	version, name, ok := strings.Cut(spec, "/")
	switch {
	case spec == "":
		entries, err := os.ReadDir("/etc/postgresql")
		if err != nil || len(entries) != 1 {
			return nil, fmt.Errorf("looking for the one version in /etc/postgresql: %d entries, %v", len(entries), err)
		}
		version, name = entries[0].Name(), "main"
	case !ok || version == "" || name == "":
		return nil, fmt.Errorf("postgres cluster %q: want VERSION/NAME, such as 15/main", spec)
	}
	return func(ctx context.Context, action string) error {
		cmd := exec.CommandContext(ctx, "pg_ctlcluster", "--skip-systemctl-redirect", version, name, action)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("pg_ctlcluster %s %s %s: %w: %s", version, name, action, err, strings.TrimSpace(string(out)))
		}
		return nil
	}, nil
}
