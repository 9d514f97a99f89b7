package chaos

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/streamledger/streamledger/examples/ov/pipeline"
	"github.com/streamledger/streamledger/internal/ovharness/oracle"
	"github.com/streamledger/streamledger/internal/ovharness/verify"
)

// zombies: two processors in one group; the one that ticks rarely (it holds closed windows
// not yet written) is stopped with SIGSTOP for Size.ZombieFor, longer than its session
// timeout, Size.Zombies times. The group gives its partitions to the other, which replays them
// from the last commit and writes their windows; then the stopped one continues, as a zombie:
// its loop runs the tick that was due (stale close batches and state rows, a commit with its
// old generation) before its client tells it the assignment was lost. The broker must refuse
// the commit (the generation is fenced), the partials it writes again must be the ones
// already stored (the oracle finds no difference), and closed_through must never move back
// (sampled every 100 ms throughout).
func (s *scene) zombies(ctx context.Context) error {
	// The zombie's writes in flight when it stops outlive the stop (a write timeout longer
	// than it, and a poll interval longer than that), so that they complete after it
	// resumes, late, as a paused process's would.
	oz := procOpts{idle: BusyIdleTimeout, wait: true, flush: s.holdingFlush(), defaultTimeouts: true,
		kafka: zombieProps, writeTimeout: 2*s.h.cfg.Size.ZombieFor + time.Second}
	o := procOpts{idle: BusyIdleTimeout, wait: true}
	c, err := s.startCrew(ctx, map[string]procOpts{"zombie": oz, "b": o})
	if err != nil {
		return err
	}
	f := s.startFeed(ctx)
	mon := s.watchProgress(ctx)
	zlog := filepath.Join(s.logDir, "processor-zombie.log")
	var lost, fenced int
	for i := range s.h.cfg.Size.Zombies {
		if err := f.until(ctx, int64(len(s.first))*int64(i+1)/int64(s.h.cfg.Size.Zombies+1)); err != nil {
			return err
		}
		if err := s.waitStable(ctx, 2, 0, 20*time.Second); err != nil {
			return err
		}
		lost0, fenced0 := countLines(zlog, `msg="`+pipeline.LostMessage+`"`), countFenced(zlog)
		z := c.procs["zombie"]
		if err := z.pause(); err != nil {
			return err
		}
		_ = sleep(ctx, s.h.cfg.Size.ZombieFor)
		z.resume()
		s.res.Zombies++
		_ = sleep(ctx, 3*time.Second) // the due tick, the lost assignment, the rejoin
		lost += countLines(zlog, `msg="`+pipeline.LostMessage+`"`) - lost0
		fenced += countFenced(zlog) - fenced0
		s.progress("zombie %d: stopped %v", i+1, s.h.cfg.Size.ZombieFor)
		if err := c.restartDied(ctx); err != nil {
			return err
		}
	}
	err = f.wait()
	samples, back := mon.stop()
	for _, m := range back {
		s.res.Mismatched++
		s.res.Mismatches = append(s.res.Mismatches, m)
	}
	s.note("the zombie, resumed %d times after %v stopped: %d partitions lost, %d commits refused as fenced; closed_through "+
		"sampled %d times, moved back %d times", s.res.Zombies, s.h.cfg.Size.ZombieFor, lost, fenced, samples, len(back))
	if fenced == 0 {
		s.note("the zombie made no commit with its old generation (its client reported the lost assignment first)")
	}
	return err
}

// zombieProps are the zombie's session timeouts: the harness's session, a poll interval long
// enough for its write timeout.
const zombieProps = "session.timeout.ms=6000,heartbeat.interval.ms=500,max.poll.interval.ms=60000"

// countFenced counts the commits a processor's log says the broker refused as fenced.
func countFenced(path string) int {
	return countLines(path, `msg="`+pipeline.CommitRefusedMessage+`"`, "fenced=true")
}

// waitStable waits until the group is stable with n members in a generation after after.
func (s *scene) waitStable(ctx context.Context, n int, after int32, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		gs, err := s.admin.Group(actx, group)
		cancel()
		if err == nil && gs.State == "Stable" && len(gs.Members) == n && gs.Epoch > after {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("chaos: the group is not stable with %d members after %v: %+v, %v", n, within, gs, err)
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

// progressWatch samples every partition's closed_through until stopped and records each time
// one moved back.
type progressWatch struct {
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	samples int
	back    []string
}

func (s *scene) watchProgress(ctx context.Context) *progressWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &progressWatch{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		last := map[oracle.Source]time.Time{}
		for sleep(ctx, 100*time.Millisecond) == nil {
			closed, err := verify.ClosedThrough(ctx, s.h.pool, s.schema, s.oracle)
			if err != nil {
				continue
			}
			w.mu.Lock()
			w.samples++
			for src, t := range closed {
				if prev, ok := last[src]; ok && t.Before(prev) && len(w.back) < 10 {
					w.back = append(w.back, fmt.Sprintf("closed_through of %s moved back from %s to %s", src,
						prev.Format(time.TimeOnly), t.Format(time.TimeOnly)))
				}
				if t.After(last[src]) {
					last[src] = t
				}
			}
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *progressWatch) stop() (samples int, back []string) {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.samples, w.back
}

// rapidKills: the case that wedged a classic group on ov broker: two processors with
// librdkafka's default timeouts (Size.RapidKafka; the short run shortens the session only,
// keeping the 300 s rebalance timeout that the wedge turned on), killed Size.RapidKills times
// at random instants within Size.RapidKillsWithin and restarted at once, so that some die
// while their JoinGroup waits. The group must then form a generation with both within
// Size.RapidRecovery.
func (s *scene) rapidKills(ctx context.Context) error {
	o := procOpts{idle: BusyIdleTimeout, defaultTimeouts: true, kafka: s.h.cfg.Size.RapidKafka, wait: true}
	c, err := s.startCrew(ctx, map[string]procOpts{"a": o, "b": o})
	if err != nil {
		return err
	}
	// Restarts do not wait for the processor to serve: the next kill may come while it
	// starts, migrates or joins.
	c.opts["a"], c.opts["b"] = o.noWait(), o.noWait()
	f := s.startFeed(ctx)
	t0 := time.Now()
	var epoch int32 // the group's generation at the last kill
	for i := range s.h.cfg.Size.RapidKills {
		at := t0.Add(s.h.cfg.Size.RapidKillsWithin * time.Duration(i) / time.Duration(s.h.cfg.Size.RapidKills))
		if err := sleep(ctx, time.Until(at)+s.h.randDur(0, s.h.cfg.Size.RapidKillsWithin/time.Duration(2*s.h.cfg.Size.RapidKills))); err != nil {
			return err
		}
		name := []string{"a", "b"}[s.h.randN(2)]
		if gs, err := s.admin.Group(ctx, group); err == nil {
			epoch = gs.Epoch
		}
		c.procs[name].kill()
		s.res.Kills++
		if err := c.restart(ctx, name); err != nil {
			return err
		}
	}
	last := time.Now()
	if err := s.waitStable(ctx, 2, epoch, s.h.cfg.Size.RapidRecovery); err != nil {
		return fmt.Errorf("%w (after %d kills in %v): the group is wedged", err, s.res.Kills, last.Sub(t0).Round(time.Millisecond))
	}
	expired := countLines(s.brokerLog(), "group member expired: ")
	stalled := countLines(s.brokerLog(), "group rebalance stalled: ")
	s.note("%d kills in %v; the group was stable with both processors %v after the last; the broker expired %d "+
		"members that never synced their generation, and reported %d stalled rebalances", s.res.Kills,
		last.Sub(t0).Round(time.Millisecond), time.Since(last).Round(time.Millisecond), expired, stalled)
	return f.wait()
}
