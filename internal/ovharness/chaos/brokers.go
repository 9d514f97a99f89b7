package chaos

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/examples/ov/feed"
	"github.com/streamledger/streamledger/internal/ovharness/oracle"
)

// probeShutdown is the --shutdown-timeout of the processor that scenario broker-restart
// stops while the broker is down. Whatever the broker does, "ov run" exits within probeBound:
// the consumer's graceful shutdown, the client's close (which waits for the group
// coordinator) included, within its timeout, and the dead-letter producer's close within the
// shutdown timeout again; ending the process (the database pool, the metrics server, a
// close's return after its timer) may add up to probeSlack.
const (
	probeShutdown = time.Second
	probeBound    = 2 * probeShutdown
	probeSlack    = time.Second
)

// brokerRestarts: two processors in one group while the broker process is killed with SIGKILL
// Size.BrokerRestarts times, spread over the feed, each time kept down for a random
// Size.BrokerDown and started again from its data directory on the same ports. The processors
// reconnect on their own; a commit, write or delivery report in flight when the broker died
// fails and is retried, or its messages are decided again by the next owner. During the last
// outage one processor is stopped gracefully, to see what its shutdown does against a broker
// that does not answer.
func (s *scene) brokerRestarts(ctx context.Context) error {
	o := procOpts{idle: BusyIdleTimeout, wait: true}
	ob := o
	ob.shutdown = probeShutdown
	c, err := s.startCrew(ctx, map[string]procOpts{"a": o, "b": ob})
	if err != nil {
		return err
	}
	f := s.startFeed(ctx)
	n := s.h.cfg.Size.BrokerRestarts
	for i := range n {
		if err := f.until(ctx, int64(len(s.first))*int64(i+1)/int64(n+1)); err != nil {
			return err
		}
		down := s.h.randDur(s.h.cfg.Size.BrokerDown[0], s.h.cfg.Size.BrokerDown[1])
		probe := i == n-1
		if probe {
			down = s.h.cfg.Size.ShutdownProbeDown
		}
		s.broker.kill()
		s.res.BrokerRestarts++
		stopped := make(chan time.Duration, 1)
		if probe {
			_ = sleep(ctx, 300*time.Millisecond)
			go func(p *proc) {
				t0 := time.Now()
				p.term(2 * time.Minute)
				stopped <- time.Since(t0)
			}(c.procs["b"])
		}
		if err := sleep(ctx, down); err != nil {
			return err
		}
		if err := s.startBroker(ctx); err != nil {
			return fmt.Errorf("chaos: restarting the broker from its data directory: %w", err)
		}
		s.progress("broker killed and restarted after %v (%d of %d records sent)", down.Round(time.Millisecond), f.sent.Load(), len(s.first))
		if probe {
			s.noteProbe(<-stopped, down, c.procs["b"])
			if err := c.restart(ctx, "b"); err != nil {
				return err
			}
		}
		if err := c.restartDied(ctx); err != nil {
			return err
		}
	}
	return f.wait()
}

// noteProbe records how long the graceful shutdown of a processor took with the broker down.
func (s *scene) noteProbe(took, down time.Duration, p *proc) {
	desc, _ := p.exit()
	verdict := "within"
	if took > probeBound+probeSlack {
		verdict = "past"
	}
	s.note("a processor stopped gracefully 0.3 s into a %v broker outage took %v to exit (%s; its shutdown timeout %v): "+
		"%s its bound of %v (and %v to end the process)",
		down.Round(time.Millisecond), took.Round(10*time.Millisecond), desc, probeShutdown, verdict, probeBound, probeSlack)
}

// moves: two processors in one group on a broker of three nodes while, every 0.3 to 1.2 s,
// every partition leader is shuffled, one partition's leader moves to another node, or the
// group coordinators move; once half the feed is produced, a node is removed.
func (s *scene) moves(ctx context.Context) error {
	o := procOpts{idle: BusyIdleTimeout, wait: true}
	c, err := s.startCrew(ctx, map[string]procOpts{"a": o, "b": o})
	if err != nil {
		return err
	}
	f := s.startFeed(ctx)
	nodes := []int32{0, 1, 2}
	topics := []string{feed.DefaultPositionsTopic, feed.DefaultPredictionsTopic,
		dlq.DefaultTopic(feed.DefaultPositionsTopic), dlq.DefaultTopic(feed.DefaultPredictionsTopic)}
	kinds := map[string]int{}
	for !f.finished() {
		if err := sleep(ctx, s.h.randDur(300*time.Millisecond, 1200*time.Millisecond)); err != nil {
			return err
		}
		kind, err := s.move(ctx, &nodes, topics, f.sent.Load() > int64(len(s.first))/2 && kinds["node removed"] == 0)
		if err != nil {
			return err
		}
		kinds[kind]++
		s.res.Moves++
		if err := c.restartDied(ctx); err != nil {
			return err
		}
	}
	s.note("moves: %v", kinds)
	return f.wait()
}

// move makes one random move, or removes a random node when remove is set.
func (s *scene) move(ctx context.Context, nodes *[]int32, topics []string, remove bool) (string, error) {
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if remove {
		i := s.h.randN(len(*nodes))
		node := (*nodes)[i]
		if err := s.admin.RemoveNode(actx, node); err != nil {
			return "", err
		}
		*nodes = append((*nodes)[:i:i], (*nodes)[i+1:]...)
		s.progress("node %d removed", node)
		return "node removed", nil
	}
	switch s.h.randN(3) {
	case 0:
		return "all leaders shuffled", s.admin.ShuffleLeaders(actx)
	case 1:
		topic := topics[s.h.randN(len(topics))]
		part := int32(s.h.randN(int(s.h.cfg.Size.Partitions)))
		return "one leader moved", s.admin.MoveLeader(actx, topic, part, (*nodes)[s.h.randN(len(*nodes))])
	default:
		return "coordinators moved", s.admin.RehashCoordinators(actx)
	}
}

// readBack replaces the feed with what the topics hold, for the oracle, the drain and the
// checks, when they differ: the processors' input is what the broker stored. It notes the
// difference.
func (s *scene) readBack(ctx context.Context) error {
	intents := map[string]feed.Record{}
	recKey := func(topic string, key, value []byte) string {
		return topic + "\x00" + string(key) + "\x00" + string(value)
	}
	for _, r := range s.records {
		intents[recKey(r.Topic, r.Key, r.Value)] = r
	}
	var got []feed.Record
	for _, topic := range []string{feed.DefaultPositionsTopic, feed.DefaultPredictionsTopic} {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		recs, err := s.kc.readAll(rctx, s.addr, topic, s.h.cfg.Size.Partitions)
		cancel()
		if err != nil {
			return err
		}
		for _, r := range recs {
			fr, ok := intents[recKey(r.Topic, r.Key, r.Value)]
			if !ok {
				return fmt.Errorf("chaos: %s[%d]@%d is no record of the feed", r.Topic, r.Partition, r.Offset)
			}
			got = append(got, fr)
		}
	}
	if samePartitions(got, s.records, s.h.cfg.Size.Partitions) {
		s.note("the topics hold exactly the %d records produced", len(got))
		return nil
	}
	or, err := oracle.Compute(s.ocfg, got)
	if err != nil {
		return err
	}
	s.note("the topics hold %d records for the %d produced (the producer's retries across broker kills); the oracle reads them",
		len(got), len(s.records))
	s.records, s.oracle, s.res.Messages = got, or, len(got)
	return nil
}

// samePartitions reports whether a and b hold the same records in each partition, in the same
// order.
func samePartitions(a, b []feed.Record, partitions int32) bool {
	if len(a) != len(b) {
		return false
	}
	split := func(rs []feed.Record) map[oracle.Source][]string {
		out := map[oracle.Source][]string{}
		for _, r := range rs {
			src := oracle.Source{Topic: r.Topic, Partition: feed.Partition(r.Key, partitions)}
			out[src] = append(out[src], string(r.Value))
		}
		return out
	}
	sa, sb := split(a), split(b)
	for src, va := range sa {
		if !slices.Equal(va, sb[src]) {
			return false
		}
	}
	return true
}

// countLogs counts the lines of the processors' logs that hold the slog message msg.
func (s *scene) countLogs(msg string) int {
	files, _ := filepath.Glob(filepath.Join(s.logDir, "processor-*.log"))
	n := 0
	for _, f := range files {
		n += countLines(f, `msg="`+msg+`"`)
	}
	return n
}

// countLines counts the lines of a file that contain every one of subs.
func countLines(path string, subs ...string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !slices.ContainsFunc(subs, func(sub string) bool { return !strings.Contains(line, sub) }) {
			n++
		}
	}
	return n
}
