package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"time"

	"github.com/streamledger/streamledger/examples/ov/internal/feed"
	"github.com/streamledger/streamledger/examples/ov/internal/oracle"
	"github.com/streamledger/streamledger/examples/ov/internal/verify"
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

// kills: one processor, killed with SIGKILL at random instants of its life (from 0.3 to 2.5 s
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
		if err := sleep(ctx, s.h.randDur(300*time.Millisecond, 2500*time.Millisecond)); err != nil {
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
// while the feed is produced. Each membership change is a rebalance (a kill's after the session
// timeout).
func (s *scene) group(ctx context.Context, assignor string) error {
	produced := s.produce(ctx, nil)
	o := procOpts{idle: BusyIdleTimeout, assignor: assignor, wait: true}
	members := map[string]*proc{}
	names := []string{"a", "b", "c"}
	p, err := s.startProc(ctx, "a", o)
	if err != nil {
		return err
	}
	members["a"] = p
	var prodErr error
	prodDone := false
	changes := 0
	for changes < s.h.cfg.Size.GroupChanges || !prodDone {
		if changes >= s.h.cfg.Size.GroupChanges {
			prodErr, prodDone = <-produced, true
			break
		}
		if err := sleep(ctx, s.h.randDur(700*time.Millisecond, 2000*time.Millisecond)); err != nil {
			return err
		}
		var running, stopped []string
		for _, n := range names {
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
		case len(running) == 0:
			action = 0
		case len(stopped) == 0:
			action = 2 + s.h.randN(2)
		}
		switch action {
		case 0, 1:
			n := stopped[s.h.randN(len(stopped))]
			if members[n], err = s.startProc(ctx, n, o); err != nil {
				return err
			}
		case 2:
			members[running[s.h.randN(len(running))]].term(45 * time.Second)
		case 3:
			members[running[s.h.randN(len(running))]].kill()
			s.res.Kills++
		}
		changes++
		s.res.Rebalances++
		select {
		case prodErr = <-produced:
			prodDone = true
		default:
		}
	}
	if prodErr != nil {
		return prodErr
	}
	s.progress("%d membership changes (%d kills) with %s", changes, s.res.Kills, assignor)
	return nil
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
// being produced.
func (s *scene) idle(ctx context.Context) error {
	o := procOpts{idle: IdleScenarioTimeout, wait: true}
	p, err := s.startProc(ctx, "p", o)
	if err != nil {
		return err
	}
	silent := oracle.Source{Topic: feed.DefaultPredictionsTopic, Partition: 0}
	last := s.oracle.Partitions[silent].MaxEventTime
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
				"were produced", silent, last.Format(time.TimeOnly), closed[silent].Format(time.TimeOnly), sent.Load(), len(s.records))
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
		return nil
	}
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
	// Bounded: what a stuck commit would accumulate is everything after partition 0 went
	// quiet (half the feed); the ledger may hold at most the records of the busiest stretch of
	// window + lateness + disorder + two ticks' worth of feed time.
	bound := busiest(s.records, s.h.cfg.Size.Feed.WindowSize+s.h.cfg.Size.Feed.Lateness+feed.DefaultMaxDisorder+
		time.Duration(2*float64(FlushInterval)*s.feedSpeed()))
	if u := s.g.uncommitted.Load(); u > int64(bound) {
		s.res.Err = fmt.Errorf("idle: the ledger held %d uncommitted messages, above the bound %d", u, bound)
	}
	if ow := s.g.openWindows.Load(); ow > int64(2*s.oracle.MaxOpenPartials) {
		s.res.Err = fmt.Errorf("idle: %d open windows, above twice the oracle's %d", ow, s.oracle.MaxOpenPartials)
	}
	s.note("bounded: at most %d uncommitted messages (bound %d) and %d open (window, key) aggregates (the oracle's peak: %d)",
		s.g.uncommitted.Load(), bound, s.g.openWindows.Load(), s.oracle.MaxOpenPartials)
	return nil
}

// feedSpeed is simulated time per wall-clock time while producing.
func (s *scene) feedSpeed() float64 {
	if len(s.records) == 0 || s.h.cfg.Size.Span <= 0 {
		return 1
	}
	return float64(s.records[len(s.records)-1].Timestamp.Sub(s.records[0].Timestamp)) / float64(s.h.cfg.Size.Span)
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
// and during a revocation (a second processor joins), after the revoke's commit and before the
// partitions are handed over. Restarted each time, while the feed is produced.
func (s *scene) faultPoints(ctx context.Context) error {
	produced := s.produce(ctx, nil)
	points := []string{"close-written", "dlq-sent", "dlq-reported", "revoke-committed"}
	fired := map[string]int{}
	var prodErr error
	prodDone := false
	for i := 0; (s.res.Kills < s.h.cfg.Size.FaultKills || !prodDone) && i < 4*s.h.cfg.Size.FaultKills; i++ {
		if s.res.Kills >= s.h.cfg.Size.FaultKills {
			prodErr, prodDone = <-produced, true
			break
		}
		point := points[i%len(points)]
		n := 1 + s.h.randN(5)
		if point == "revoke-committed" {
			n = 1 // one revocation per lifetime
		}
		o := procOpts{idle: BusyIdleTimeout, fault: fmt.Sprintf("%s:%d", point, n), wait: true, static: faultStatic}
		p, err := s.startProc(ctx, "a", o)
		if err != nil {
			return err
		}
		var b *proc
		if point == "revoke-committed" {
			_ = sleep(ctx, s.h.randDur(300*time.Millisecond, 1000*time.Millisecond))
			if b, err = s.startProc(ctx, "b", procOpts{idle: BusyIdleTimeout, wait: true}); err != nil {
				return err
			}
			s.res.Rebalances++
		}
		select {
		case <-p.done:
		case <-time.After(8 * time.Second):
		case <-ctx.Done():
			return ctx.Err()
		}
		if p.selfKilled() {
			s.res.Kills++
			fired[point]++
		} else if p.running() {
			p.term(45 * time.Second)
			if prodDone {
				// Everything is produced and the point was not reached: the input that could
				// reach it (new dead letters, new windows) is used up, so more lives would
				// only wait.
				s.note("fault point %s not reached after the feed was produced; stopping", o.fault)
				if b != nil {
					b.term(45 * time.Second)
				}
				break
			}
		} else {
			desc, _ := p.exit()
			s.note("processor armed with %s exited otherwise: %s", o.fault, desc)
		}
		if b != nil {
			b.term(45 * time.Second)
		}
		if !prodDone {
			select {
			case prodErr = <-produced:
				prodDone = true
			default:
			}
		}
	}
	if !prodDone {
		prodErr = <-produced
	}
	if prodErr != nil {
		return prodErr
	}
	s.note("fault points fired: %v", fired)
	for _, pt := range points {
		if fired[pt] == 0 {
			s.note("fault point %s never fired", pt)
		}
	}
	return nil
}

// pgCtlCluster stops or starts the only Postgres cluster of a Debian-style installation.
func pgCtlCluster(ctx context.Context, action string) error {
	entries, err := os.ReadDir("/etc/postgresql")
	if err != nil || len(entries) != 1 {
		return fmt.Errorf("looking for the one cluster in /etc/postgresql: %v entries, %v", len(entries), err)
	}
	cmd := exec.CommandContext(ctx, "pg_ctlcluster", "--skip-systemctl-redirect", entries[0].Name(), "main", action)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctlcluster %s: %w: %s", action, err, strings.TrimSpace(string(out)))
	}
	return nil
}
