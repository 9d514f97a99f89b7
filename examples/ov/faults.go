package main

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/streamledger/streamledger/ledger/consumer"
)

// FaultEnv names the environment variable that arms fault points in "ov run": a test hook for
// the reliability harness, not a feature. Its value is a comma-separated list of point:N; the
// process kills itself with SIGKILL (as kill -9 would) at the Nth occurrence of the point.
const FaultEnv = "OV_FAULT"

// The fault points, each observed through a consumer hook of the OV wiring.
const (
	// FaultCloseWritten: a close batch (partials and closed_through) committed in Postgres, its
	// offsets not yet committed to Kafka.
	FaultCloseWritten = "close-written"
	// FaultDLQSent: a dead letter handed to the producer, its delivery report not yet received.
	FaultDLQSent = "dlq-sent"
	// FaultDLQReported: a positive delivery report received, the ledger not yet acked nor the
	// offset committed.
	FaultDLQReported = "dlq-reported"
	// FaultRevokeWritten: during a revocation (or the shutdown, which gives up every
	// partition the same way), after a close batch with partials committed in Postgres and
	// before the revocation's final offset commit: the next owner replays from the older
	// commit and must rebuild exactly the windows already written.
	FaultRevokeWritten = "revoke-written"
	// FaultRevokeCommitted: during a revocation, after its final commit and before the
	// partitions are given up to the group.
	FaultRevokeCommitted = "revoke-committed"
)

// faultPoints lists every point.
func faultPoints() []string {
	return []string{FaultCloseWritten, FaultDLQSent, FaultDLQReported, FaultRevokeWritten, FaultRevokeCommitted}
}

// faultSet counts occurrences of armed fault points.
type faultSet struct {
	at   map[string]int
	seen map[string]int
	kill func()
}

// parseFaults reads point:N[,point:N]; an empty string arms nothing.
func parseFaults(s string) (*faultSet, error) {
	fs := &faultSet{at: map[string]int{}, seen: map[string]int{}, kill: killSelf}
	if strings.TrimSpace(s) == "" {
		return fs, nil
	}
	for _, part := range strings.Split(s, ",") {
		name, n, ok := strings.Cut(strings.TrimSpace(part), ":")
		k, err := strconv.Atoi(n)
		if !ok || err != nil || k < 1 {
			return nil, fmt.Errorf("$%s: %q: want point:N with N >= 1", FaultEnv, part)
		}
		if !slices.Contains(faultPoints(), name) {
			return nil, fmt.Errorf("$%s: unknown fault point %q: want one of %s", FaultEnv, name, strings.Join(faultPoints(), ", "))
		}
		fs.at[name] = k
	}
	return fs, nil
}

func killSelf() {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way; do nothing more
}

// hooks returns the consumer hooks that watch the armed points, none when nothing is armed.
func (fs *faultSet) hooks(log *slog.Logger) []consumer.Hook {
	if len(fs.at) == 0 {
		return nil
	}
	log.Warn("fault points armed: this process will kill itself", "points", fs.at)
	return []consumer.Hook{faultHook{fs}}
}

// hit counts an occurrence of point and kills the process at the armed one; detail says where
// it happened, in the log line that precedes the kill.
func (fs *faultSet) hit(point, detail string) {
	n, armed := fs.at[point]
	if !armed {
		return
	}
	fs.seen[point]++
	if fs.seen[point] == n {
		fmt.Fprintf(os.Stderr, "fault point %s reached (occurrence %d%s): SIGKILL\n", point, n, detail)
		fs.kill()
	}
}

// faultHook runs on the consumer's loop goroutine, so the process dies exactly at the point.
type faultHook struct{ fs *faultSet }

func (h faultHook) OnWrite(w consumer.WriteInfo) {
	if w.Kind != consumer.WriteClose || w.Err != nil {
		return
	}
	detail := fmt.Sprintf(": %s, %d partials, closed_through %s", w.Source, w.Rows, w.ClosedThrough.UTC().Format(time.RFC3339))
	if !w.Revoke {
		h.fs.hit(FaultCloseWritten, detail)
		return
	}
	// Only a batch with partials: one that carries progress alone leaves the next owner
	// nothing to rebuild.
	if w.Rows > 0 {
		h.fs.hit(FaultRevokeWritten, detail)
	}
}

func (h faultHook) OnMessage(m consumer.MessageInfo) {
	if m.Decision == consumer.DeadLettered {
		h.fs.hit(FaultDLQSent, fmt.Sprintf(": %s@%d", m.TopicPartition, m.Offset))
	}
}

func (h faultHook) OnDeadLetter(d consumer.DeadLetterInfo) {
	if d.Err == nil {
		h.fs.hit(FaultDLQReported, fmt.Sprintf(": %s@%d", d.TopicPartition, d.Offset))
	}
}

func (h faultHook) OnCommit(c consumer.CommitInfo) {
	if c.Reason == consumer.CommitRevoke {
		h.fs.hit(FaultRevokeCommitted, fmt.Sprintf(": %d offsets", len(c.Commits)))
	}
}

// rateClock returns a clock that starts at now() and runs rate times faster.
func rateClock(rate float64, now func() time.Time) func() time.Time {
	if rate == 1 {
		return nil
	}
	start := now()
	return func() time.Time {
		return start.Add(time.Duration(float64(now().Sub(start)) * rate))
	}
}
