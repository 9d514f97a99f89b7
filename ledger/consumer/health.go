package consumer

import (
	"sync/atomic"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// HealthState is what a liveness probe reports of a [Consumer].
type HealthState uint8

const (
	// HealthStopped: Run has returned.
	HealthStopped HealthState = iota
	// HealthStarting: the consumer has held no partition yet, for at most AssignmentWait
	// since New or since Run started. A process that serves Health before it calls Run (Run
	// blocks) is starting, not stopped, in between.
	HealthStarting
	// Healthy: the consumer holds partitions (or has held none for less than
	// AssignmentWait), and its sink writes succeed.
	Healthy
	// HealthNoAssignment: the consumer is subscribed but has held no partition for longer
	// than [Config.AssignmentWait]. Either the group has more members than partitions, or the
	// group cannot complete a rebalance (members that died without leaving, a coordinator
	// that does not answer).
	HealthNoAssignment
	// HealthStalledWrites: the sink writes have failed, or been in flight, for longer than
	// [Config.WriteTimeout]: nothing new is committed.
	HealthStalledWrites
)

func (s HealthState) String() string {
	switch s {
	case HealthStopped:
		return "stopped"
	case HealthStarting:
		return "starting"
	case Healthy:
		return "healthy"
	case HealthNoAssignment:
		return "no assignment"
	case HealthStalledWrites:
		return "stalled writes"
	}
	return "unknown"
}

// Health is a [Consumer]'s liveness, as of the call.
type Health struct {
	State HealthState
	// Partitions is the number of partitions the consumer holds.
	Partitions int
	// Unassigned is how long the consumer has held no partition; zero while it holds some.
	Unassigned time.Duration
	// SinceAssignment is the time since the consumer's assignment last changed (or since New
	// or Run started, before the first one).
	SinceAssignment time.Duration
	// Stalled is how long the sink writes have failed or been in flight; zero while they
	// succeed.
	Stalled time.Duration
}

// liveness holds what Health reads, written by the polling goroutine, read from any. Times
// are wall-clock Unix nanoseconds, zero when unset.
type liveness struct {
	stopped        atomic.Bool // Run has returned
	partitions     atomic.Int64
	assignedAt     atomic.Int64 // the assignment last changed (or Run started)
	unassignedFrom atomic.Int64 // the consumer has held no partition since; 0 while it holds some
	assignedOnce   atomic.Bool
	writingFrom    atomic.Int64 // the writes in flight started
	failingFrom    atomic.Int64 // the first of the failed writes since the last success
	warned         bool         // the no-assignment warning was logged for this episode
	waitNoticed    bool         // the wait for the first assignment was logged
}

// started records New, and then the start of Run: holding nothing, waiting for an assignment
// from now on.
func (l *liveness) started(now time.Time) {
	l.assignedAt.Store(now.UnixNano())
	l.unassignedFrom.Store(now.UnixNano())
}

// assigned records that the consumer now holds n partitions.
func (l *liveness) assigned(now time.Time, n int) {
	l.assignedOnce.Store(true)
	prev := l.partitions.Swap(int64(n))
	l.assignedAt.Store(now.UnixNano())
	switch {
	case n > 0:
		l.unassignedFrom.Store(0)
		l.warned = false
	case prev > 0 || l.unassignedFrom.Load() == 0:
		l.unassignedFrom.Store(now.UnixNano())
	}
}

// wrote records the outcome of a round of writes that started at from.
func (l *liveness) wrote(now time.Time, ok bool) {
	l.writingFrom.Store(0)
	if ok {
		l.failingFrom.Store(0)
		return
	}
	l.failingFrom.CompareAndSwap(0, now.UnixNano())
}

// health computes the Health as of now.
func (l *liveness) health(now time.Time, wait, writeTimeout time.Duration) Health {
	since := func(ns int64) time.Duration {
		if ns == 0 {
			return 0
		}
		return max(now.Sub(time.Unix(0, ns)), 0)
	}
	h := Health{
		Partitions:      int(l.partitions.Load()),
		Unassigned:      since(l.unassignedFrom.Load()),
		SinceAssignment: since(l.assignedAt.Load()),
		Stalled:         max(since(l.writingFrom.Load()), since(l.failingFrom.Load())),
	}
	switch {
	case l.stopped.Load():
		h.State = HealthStopped
	case h.Stalled > writeTimeout:
		h.State = HealthStalledWrites
	case h.Partitions == 0 && wait >= 0 && h.Unassigned > wait:
		h.State = HealthNoAssignment
	case !l.assignedOnce.Load():
		h.State = HealthStarting
	default:
		h.State = Healthy
	}
	return h
}

// Health reports the consumer's liveness: whether it holds partitions, and whether its writes
// succeed. It is safe to call from any goroutine, for example from an HTTP health check.
func (c *Consumer[K]) Health() Health {
	return c.p.live.health(time.Now(), c.s.AssignmentWait, c.s.WriteTimeout)
}

// sessionTimeout is the group session timeout of km: session.timeout.ms, or librdkafka's
// default.
func sessionTimeout(km kafka.ConfigMap) (time.Duration, error) {
	session, ok, err := configMillis(km, "session.timeout.ms")
	if !ok {
		session = defaultSessionTimeout
	}
	return session, err
}

// subscribed logs that Run subscribed and waits for the group to assign it partitions.
func (p *processor[K]) subscribed() {
	p.log.Info("subscribed; waiting for the group to assign partitions", "group", p.s.kafka["group.id"],
		"session_timeout", p.session)
}

// checkAssignment logs, once, that no assignment came within a session timeout of the start
// (a restarted member waits for the coordinator to time out its dead predecessor), and a
// warning once per episode in which the consumer has held no partition for longer than
// AssignmentWait.
func (p *processor[K]) checkAssignment() {
	p.checkFirstAssignment()
	l := &p.live
	if l.warned || p.s.AssignmentWait < 0 || len(p.order) > 0 {
		return
	}
	h := l.health(time.Now(), p.s.AssignmentWait, p.s.WriteTimeout)
	if h.State != HealthNoAssignment {
		return
	}
	l.warned = true
	p.log.Warn("the consumer has held no partition for longer than AssignmentWait: the group has more "+
		"members than partitions, or cannot complete a rebalance (members that died without leaving, "+
		"a coordinator that does not answer)", "unassigned", h.Unassigned.Round(time.Second),
		"assignment_wait", p.s.AssignmentWait, "assigned_before", l.assignedOnce.Load())
}

// checkFirstAssignment logs once, at INFO, when no assignment has come a session timeout
// after Run started: the group coordinator rebalances only once every member it knows has
// rejoined or timed out, so a member restarted after a crash (a process killed, for example)
// waits until the session of its dead predecessor times out. It says nothing more once the
// AssignmentWait warning has been logged.
func (p *processor[K]) checkFirstAssignment() {
	l := &p.live
	if l.waitNoticed || l.warned || l.assignedOnce.Load() {
		return
	}
	h := l.health(time.Now(), p.s.AssignmentWait, p.s.WriteTimeout)
	if h.Unassigned < p.session {
		return
	}
	l.waitNoticed = true
	if id, static := p.s.kafka["group.instance.id"]; static {
		p.log.Info("no partitions assigned after session.timeout.ms: the group waits for members that died "+
			"without leaving it to time out, or for a rebalance to complete", "waited", h.Unassigned.Round(time.Second),
			"session.timeout.ms", p.session, "group.instance.id", id)
		return
	}
	p.log.Info("no partitions assigned after session.timeout.ms: the group waits for members that died without "+
		"leaving it (a restarted process's predecessor, for example) to time out before it rebalances; with "+
		"group.instance.id set (static membership) a restarted member takes its partitions back at once",
		"waited", h.Unassigned.Round(time.Second), "session.timeout.ms", p.session, "group.instance.id", "unset")
}
