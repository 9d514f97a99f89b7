package killpoints

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

// Env names the environment variable that arms fault points in "ov run". Its value is a
// comma-separated list of point:N; the process kills itself with SIGKILL (as kill -9 would) at
// the Nth occurrence of the point.
const Env = "OV_FAULT"

// The fault points, each observed through a consumer hook of the OV wiring.
const (
	// CloseWritten: a close batch (partials and closed_through) committed in Postgres, its
	// offsets not yet committed to Kafka.
	CloseWritten = "close-written"
	// DLQSent: a dead letter handed to the producer, its delivery report not yet received.
	DLQSent = "dlq-sent"
	// DLQReported: a positive delivery report received, the ledger not yet acked nor the
	// offset committed.
	DLQReported = "dlq-reported"
	// RevokeWritten: during a revocation (or the shutdown, which gives up every
	// partition the same way), after a close batch with partials committed in Postgres and
	// before the revocation's final offset commit: the next owner replays from the older
	// commit and must rebuild exactly the windows already written.
	RevokeWritten = "revoke-written"
	// RevokeCommitted: during a revocation, after its final commit and before the
	// partitions are given up to the group.
	RevokeCommitted = "revoke-committed"
)

// Points lists every point.
func Points() []string {
	return []string{CloseWritten, DLQSent, DLQReported, RevokeWritten, RevokeCommitted}
}

// Set counts occurrences of armed fault points and kills the process at the armed one.
type Set struct {
	at   map[string]int
	seen map[string]int
	kill func()
}

// Parse reads point:N[,point:N]; an empty string arms nothing.
func Parse(s string) (*Set, error) {
	fs := &Set{at: map[string]int{}, seen: map[string]int{}, kill: killSelf}
	if strings.TrimSpace(s) == "" {
		return fs, nil
	}
	for _, part := range strings.Split(s, ",") {
		name, n, ok := strings.Cut(strings.TrimSpace(part), ":")
		k, err := strconv.Atoi(n)
		if !ok || err != nil || k < 1 {
			return nil, fmt.Errorf("$%s: %q: want point:N with N >= 1", Env, part)
		}
		if !slices.Contains(Points(), name) {
			return nil, fmt.Errorf("$%s: unknown fault point %q: want one of %s", Env, name, strings.Join(Points(), ", "))
		}
		fs.at[name] = k
	}
	return fs, nil
}

func killSelf() {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way; do nothing more
}

// Hooks returns the consumer hooks that watch the armed points, none when nothing is armed.
func (fs *Set) Hooks(log *slog.Logger) []consumer.Hook {
	if len(fs.at) == 0 {
		return nil
	}
	log.Warn("fault points armed: this process will kill itself", "points", fs.at)
	return []consumer.Hook{faultHook{fs}}
}

// hit counts an occurrence of point and kills the process at the armed one; detail says where
// it happened, in the log line that precedes the kill.
func (fs *Set) hit(point, detail string) {
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
type faultHook struct{ fs *Set }

func (h faultHook) OnWrite(w consumer.WriteInfo) {
	if w.Kind != consumer.WriteClose || w.Err != nil {
		return
	}
	detail := fmt.Sprintf(": %s, %d partials, closed_through %s", w.Source, w.Rows, w.ClosedThrough.UTC().Format(time.RFC3339))
	if !w.Revoke {
		h.fs.hit(CloseWritten, detail)
		return
	}
	// Only a batch with partials: one that carries progress alone leaves the next owner
	// nothing to rebuild.
	if w.Rows > 0 {
		h.fs.hit(RevokeWritten, detail)
	}
}

func (h faultHook) OnMessage(m consumer.MessageInfo) {
	if m.Decision == consumer.DeadLettered {
		h.fs.hit(DLQSent, fmt.Sprintf(": %s@%d", m.TopicPartition, m.Offset))
	}
}

func (h faultHook) OnDeadLetter(d consumer.DeadLetterInfo) {
	if d.Err == nil {
		h.fs.hit(DLQReported, fmt.Sprintf(": %s@%d", d.TopicPartition, d.Offset))
	}
}

func (h faultHook) OnCommit(c consumer.CommitInfo) {
	if c.Reason == consumer.CommitRevoke {
		h.fs.hit(RevokeCommitted, fmt.Sprintf(": %d offsets", len(c.Commits)))
	}
}
