package broker

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Line prefixes of what the watch prints, one event per line.
const (
	generationPrefix = "group generation: "
	expiredPrefix    = "group member expired: "
	stalledPrefix    = "group rebalance stalled: "
)

// GenerationLine is the line the broker prints the first time it sees a generation of a group:
// for a classic group when a SyncGroup request names it, for a KIP-848 group when its group
// epoch changes. Each is a rebalance the broker ran.
func GenerationLine(group string, generation int32) string {
	return fmt.Sprintf("%sgeneration=%d group=%s", generationPrefix, generation, strconv.Quote(group))
}

// IsGeneration reports whether line is a [GenerationLine] of group, and its generation.
func IsGeneration(line, group string) (generation string, ok bool) {
	rest, ok := strings.CutPrefix(line, generationPrefix+"generation=")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, " group="+strconv.Quote(group))
}

// IsExpiry reports whether line is an expired member's line.
func IsExpiry(line string) bool { return strings.HasPrefix(line, expiredPrefix) }

// Timing of the watch.
const (
	pollEvery = 100 * time.Millisecond
	// defaultSession is librdkafka's session.timeout.ms, for a member whose JoinGroup the
	// watch did not see.
	defaultSession = 45 * time.Second
	// expiryLead is how much sooner than its session timeout after a generation formed the
	// watch expires a member that has not synced it. kfake starts every member's session
	// timer when it answers the JoinGroup that forms the generation, and does not refresh it
	// while the member waits in SyncGroup for its leader: the watch must remove a dead leader
	// before the live members waiting for it are timed out themselves (Kafka keeps a member
	// that waits in SyncGroup alive). A live member syncs within milliseconds of its JoinGroup
	// response, so not having synced for most of the session is death.
	expiryLead = time.Second
	// stallAfter is how long a rebalance runs before the watch says so, and how often it
	// repeats it.
	stallAfter = 30 * time.Second
)

// member is what the watch saw of one classic member's requests.
type member struct {
	session  time.Duration // from its JoinGroup; zero if unseen
	synced   int32         // the highest generation it synced, heartbeat or committed in
	last     time.Time     // its last request
	lastJoin time.Time
}

// classic is the watch's view of one classic group.
type classic struct {
	gen      int32
	genAt    time.Time       // when the watch saw gen form
	inGen    map[string]bool // the members gen was formed with
	members  map[string]*member
	sessions map[string]time.Duration // by group.instance.id, for static members' first join
	expired  map[string]bool          // member@generation already expired
	printed  map[int32]bool           // generations printed
	syncAt   map[int32]time.Time      // when a SyncGroup first named each generation
	since    time.Time                // start of the rebalance in progress, zero when stable
	warned   time.Time
}

// watch observes group requests on kfake's loop (it never changes them) and polls the groups
// on a goroutine of its own.
type watch struct {
	c      *kfake.Cluster
	log    io.Writer
	expire bool
	cl     *kgo.Client
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex
	classic   map[string]*classic
	consumer  map[string]int32 // KIP-848 groups by their last printed epoch
	writeLine sync.Mutex
}

func newWatch(c *kfake.Cluster, log io.Writer, expire bool) (*watch, error) {
	if log == nil {
		log = io.Discard
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		return nil, fmt.Errorf("broker: the group watch's client: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &watch{c: c, log: log, expire: expire, cl: cl, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		classic: map[string]*classic{}, consumer: map[string]int32{}}
	for _, k := range []kmsg.Key{kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Heartbeat, kmsg.OffsetCommit, kmsg.ConsumerGroupHeartbeat} {
		// An observer returns false: kfake handles every request itself, and a control
		// function that handles nothing stays registered.
		c.ControlKey(k.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
			w.observe(req, time.Now())
			return nil, nil, false
		})
	}
	go w.run()
	return w, nil
}

func (w *watch) stop() {
	w.cancel()
	<-w.done
	w.cl.Close()
}

func (w *watch) println(s string) {
	w.writeLine.Lock()
	defer w.writeLine.Unlock()
	fmt.Fprintln(w.log, s)
}

func (w *watch) group(name string) *classic {
	g := w.classic[name]
	if g == nil {
		g = &classic{inGen: map[string]bool{}, members: map[string]*member{}, sessions: map[string]time.Duration{},
			expired: map[string]bool{}, printed: map[int32]bool{}, syncAt: map[int32]time.Time{}}
		w.classic[name] = g
	}
	return g
}

func (g *classic) member(id string) *member {
	m := g.members[id]
	if m == nil {
		m = &member{}
		g.members[id] = m
	}
	return m
}

// observe records a group request. It runs on kfake's loop and must not block.
func (w *watch) observe(req kmsg.Request, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := func(g *classic, id string, gen int32) {
		if id == "" {
			return
		}
		m := g.member(id)
		m.last = now
		m.synced = max(m.synced, gen)
	}
	switch r := req.(type) {
	case *kmsg.JoinGroupRequest:
		g := w.group(r.Group)
		session := time.Duration(r.SessionTimeoutMillis) * time.Millisecond
		if r.InstanceID != nil {
			g.sessions[*r.InstanceID] = session
		}
		if r.MemberID != "" {
			m := g.member(r.MemberID)
			m.session, m.last, m.lastJoin = session, now, now
		}
	case *kmsg.SyncGroupRequest:
		g := w.group(r.Group)
		seen(g, r.MemberID, r.Generation)
		if !g.printed[r.Generation] {
			g.printed[r.Generation] = true
			g.syncAt[r.Generation] = now
			w.println(GenerationLine(r.Group, r.Generation))
		}
	case *kmsg.HeartbeatRequest:
		seen(w.group(r.Group), r.MemberID, r.Generation)
	case *kmsg.OffsetCommitRequest:
		if r.Generation >= 0 && r.MemberID != "" {
			if g := w.classic[r.Group]; g != nil {
				seen(g, r.MemberID, r.Generation)
			}
		}
	case *kmsg.ConsumerGroupHeartbeatRequest:
		if _, ok := w.consumer[r.Group]; !ok {
			w.consumer[r.Group] = -1
		}
	}
}

func (w *watch) run() {
	defer close(w.done)
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-t.C:
		}
		w.mu.Lock()
		names := make([]string, 0, len(w.classic)+len(w.consumer))
		for n := range w.classic {
			names = append(names, n)
		}
		var consumers []string
		for n := range w.consumer {
			consumers = append(consumers, n)
		}
		w.mu.Unlock()
		for _, n := range consumers {
			w.pollConsumer(n)
		}
		for _, n := range names {
			w.pollClassic(n, time.Now())
		}
	}
}

// pollConsumer prints a KIP-848 group's new epochs.
func (w *watch) pollConsumer(name string) {
	info := w.c.GroupInfo(name)
	if info == nil {
		return
	}
	w.mu.Lock()
	last := w.consumer[name]
	w.consumer[name] = info.Epoch
	w.mu.Unlock()
	if info.Epoch != last && info.Epoch > 0 {
		w.println(GenerationLine(name, info.Epoch))
	}
}

// pollClassic follows a classic group's generations, expires the members that never synced
// theirs, and says when a rebalance runs long.
func (w *watch) pollClassic(name string, now time.Time) {
	info := w.c.GroupInfo(name)
	w.mu.Lock()
	defer w.mu.Unlock()
	g := w.classic[name]
	if info == nil || g == nil {
		delete(w.classic, name)
		return
	}
	if info.Epoch != g.gen {
		g.gen, g.genAt, g.inGen = info.Epoch, now, map[string]bool{}
	}
	switch info.State {
	case "CompletingRebalance", "Stable":
		for _, m := range info.Members {
			g.inGen[m.MemberID] = true
		}
	}
	if info.State == "PreparingRebalance" || info.State == "CompletingRebalance" {
		if g.since.IsZero() {
			g.since = now
		}
		if now.Sub(g.since) >= stallAfter && now.Sub(g.warned) >= stallAfter {
			g.warned = now
			w.println(stalledMessage(name, info, g, now))
		}
	} else {
		g.since, g.warned = time.Time{}, time.Time{}
	}
	if !w.expire {
		return
	}
	for _, gm := range info.Members {
		id := gm.MemberID
		m := g.members[id]
		if !g.formedWith(id, m) || (m != nil && m.synced >= g.gen) || g.expired[fmt.Sprintf("%s@%d", id, g.gen)] {
			continue
		}
		if now.Sub(g.genAt) < expiryAfter(g.session(m, gm.InstanceID)) {
			continue
		}
		g.expired[fmt.Sprintf("%s@%d", id, g.gen)] = true
		go w.leave(name, id, g.gen, now.Sub(g.genAt))
	}
}

// formedWith reports whether the current generation was formed with member id: the watch saw
// it among the members while the generation was completing or stable, or its last JoinGroup
// came before anyone synced the generation (a member that joins a formed generation does so
// after its leader synced, but for a window of a round trip; the watch may miss a
// generation's completing and stable states when the next rebalance starts within a poll).
func (g *classic) formedWith(id string, m *member) bool {
	if g.inGen[id] {
		return true
	}
	at, ok := g.syncAt[g.gen]
	return ok && m != nil && !m.lastJoin.IsZero() && m.lastJoin.Before(at)
}

// expiryAfter is how long after a generation formed a member of it that has not synced it is
// expired: expiryLead before its session timeout, or half of a session shorter than twice
// that.
func expiryAfter(session time.Duration) time.Duration {
	if session < 2*expiryLead {
		return session / 2
	}
	return session - expiryLead
}

// session is a member's session timeout as its JoinGroup gave it, or the librdkafka default.
func (g *classic) session(m *member, instance *string) time.Duration {
	if m != nil && m.session > 0 {
		return m.session
	}
	if instance != nil {
		if s, ok := g.sessions[*instance]; ok && s > 0 {
			return s
		}
	}
	return defaultSession
}

// leave removes an expired member the way its own LeaveGroup would (by member ID only: a
// group.instance.id would name its replacement if it has one).
func (w *watch) leave(group, memberID string, gen int32, silent time.Duration) {
	ctx, cancel := withTimeout(w.ctx)
	defer cancel()
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = group
	req.MemberID = memberID
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID = memberID
	req.Members = append(req.Members, lm)
	resp, err := req.RequestWith(ctx, w.cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
		for _, m := range resp.Members {
			if err == nil {
				err = kerr.ErrorForCode(m.ErrorCode)
			}
		}
	}
	result := "removed"
	if err != nil {
		result = "not removed: " + err.Error()
	}
	w.println(fmt.Sprintf("%sgroup=%s member=%s generation=%d: it has not synced, heartbeaten or committed in the "+
		"generation for %v, most of its session timeout (its JoinGroup response was not delivered: a member that died "+
		"while it waited, which kfake may never time out); %s", expiredPrefix, strconv.Quote(group), memberID, gen,
		silent.Round(time.Millisecond), result))
}

func stalledMessage(name string, info *kfake.GroupInfo, g *classic, now time.Time) string {
	var ms []string
	for _, gm := range info.Members {
		desc := gm.MemberID
		if m := g.members[gm.MemberID]; m != nil {
			desc += fmt.Sprintf(" (last request %v ago", now.Sub(m.last).Round(time.Second))
			if !m.lastJoin.IsZero() {
				desc += fmt.Sprintf(", last JoinGroup %v ago", now.Sub(m.lastJoin).Round(time.Second))
			}
			desc += ")"
		}
		ms = append(ms, desc)
	}
	slices.Sort(ms)
	return fmt.Sprintf("%sgroup=%s state=%s generation=%d for %v; members: %s", stalledPrefix, strconv.Quote(name), info.State,
		info.Epoch, now.Sub(g.since).Round(time.Second), strings.Join(ms, "; "))
}
