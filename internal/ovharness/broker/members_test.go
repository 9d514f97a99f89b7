package broker

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// rawMember speaks the classic group protocol request by request, on a connection of its own,
// so that a test decides exactly when it joins, syncs, heartbeats or dies.
type rawMember struct {
	t         *testing.T
	cl        *kgo.Client
	group, id string
	gen       int32
	session   time.Duration
	rebalance time.Duration
}

func newRawMember(t *testing.T, addrs []string, group string, session, rebalance time.Duration) *rawMember {
	t.Helper()
	// Versions before topic IDs, so that OffsetCommit names its topic.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.MaxVersions(kversion.V3_6_0()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return &rawMember{t: t, cl: cl, group: group, session: session, rebalance: rebalance}
}

// die closes the member's connection, as a killed process does.
func (m *rawMember) die() { m.cl.Close() }

func (m *rawMember) joinRequest() *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.ProtocolType = m.group, m.id, "consumer"
	req.SessionTimeoutMillis = int32(m.session / time.Millisecond)
	req.RebalanceTimeoutMillis = int32(m.rebalance / time.Millisecond)
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name = "range"
	p.Metadata = (&kmsg.ConsumerMemberMetadata{Topics: []string{"t"}}).AppendTo(nil)
	req.Protocols = append(req.Protocols, p)
	return req
}

// register gets a member ID (the MEMBER_ID_REQUIRED round of a new member) without joining.
func (m *rawMember) register(ctx context.Context) {
	m.t.Helper()
	resp, err := m.joinRequest().RequestWith(ctx, m.cl)
	require.NoError(m.t, err)
	require.Equal(m.t, kerr.MemberIDRequired.Code, resp.ErrorCode)
	m.id = resp.MemberID
}

// join sends a JoinGroup with the member's ID and waits for its response.
func (m *rawMember) join(ctx context.Context) (*kmsg.JoinGroupResponse, error) {
	resp, err := m.joinRequest().RequestWith(ctx, m.cl)
	if err == nil && resp.ErrorCode == 0 {
		m.gen = resp.Generation
	}
	return resp, err
}

// joinAsync sends the JoinGroup and returns a channel with its outcome.
func (m *rawMember) joinAsync(ctx context.Context) <-chan error {
	done := make(chan error, 1)
	go func() {
		resp, err := m.join(ctx)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		done <- err
	}()
	return done
}

// sync sends SyncGroup; a leader assigns partition 0 of "t" to every member it lists.
func (m *rawMember) sync(ctx context.Context, members []string) error {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.Generation = m.group, m.id, m.gen
	req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	for _, id := range members {
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID = id
		a.MemberAssignment = (&kmsg.ConsumerMemberAssignment{Topics: []kmsg.ConsumerMemberAssignmentTopic{{Topic: "t", Partitions: []int32{0}}}}).AppendTo(nil)
		req.GroupAssignment = append(req.GroupAssignment, a)
	}
	resp, err := req.RequestWith(ctx, m.cl)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.ErrorCode)
}

// joinAndSync joins and syncs, leading with every member the join response lists.
func (m *rawMember) joinAndSync(ctx context.Context) {
	m.t.Helper()
	resp, err := m.join(ctx)
	require.NoError(m.t, err)
	require.NoError(m.t, kerr.ErrorForCode(resp.ErrorCode))
	var ids []string
	for _, x := range resp.Members {
		ids = append(ids, x.MemberID)
	}
	require.NoError(m.t, m.sync(ctx, ids))
}

func (m *rawMember) heartbeat(ctx context.Context) error {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation = m.group, m.id, m.gen
	resp, err := req.RequestWith(ctx, m.cl)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.ErrorCode)
}

// heartbeatUntil heartbeats every 100 ms until one answers REBALANCE_IN_PROGRESS (true) or
// d passes (false).
func (m *rawMember) heartbeatUntil(ctx context.Context, d time.Duration) bool {
	m.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		err := m.heartbeat(ctx)
		if err == kerr.RebalanceInProgress {
			return true
		}
		require.NoError(m.t, err)
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// members returns the group's member IDs and generation as the cluster has them.
func members(c *kfake.Cluster, group string) ([]string, int32) {
	info := c.GroupInfo(group)
	if info == nil {
		return nil, 0
	}
	var ids []string
	for _, m := range info.Members {
		ids = append(ids, m.MemberID)
	}
	return ids, info.Epoch
}

// waitMembers waits until the group lists n members in state.
func waitMembers(t *testing.T, c *kfake.Cluster, group string, n int, state string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := c.WaitGroupInfo(ctx, group, func(g *kfake.GroupInfo) bool {
		return g != nil && len(g.Members) == n && g.State == state
	})
	require.NoError(t, err, "waiting for %d members in %s", n, state)
}

// deadJoiner builds the wedge's first step on c: member a leads a stable group; member d
// registers and sends its JoinGroup, which waits for a; d dies while it waits; a rejoins,
// which forms a generation with d in it (d's response is dropped), and syncs an assignment
// for both. It returns a, heartbeating nothing yet, and d's ID.
func deadJoiner(t *testing.T, ctx context.Context, c *kfake.Cluster, session time.Duration) (*rawMember, string) {
	t.Helper()
	a := newRawMember(t, c.ListenAddrs(), "g", session, 10*time.Second)
	a.register(ctx)
	a.joinAndSync(ctx)
	waitMembers(t, c, "g", 1, "Stable")

	d := newRawMember(t, c.ListenAddrs(), "g", session, 10*time.Second)
	d.register(ctx)
	waiting := d.joinAsync(ctx)
	waitMembers(t, c, "g", 2, "PreparingRebalance")
	d.die()
	require.Error(t, <-waiting, "the dead member's JoinGroup is never answered")

	require.True(t, a.heartbeatUntil(ctx, 2*time.Second), "a learns of the rebalance")
	a.joinAndSync(ctx)
	waitMembers(t, c, "g", 2, "Stable")
	return a, d.id
}

// commit commits offset for partition 0 of "t" with the member's generation (gen overrides it
// when not nil) and returns the partition's error.
func (m *rawMember) commit(ctx context.Context, offset int64, gen *int32) error {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.MemberID, req.Generation = m.group, m.id, m.gen
	if gen != nil {
		req.Generation = *gen
	}
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = 0, offset, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, m.cl)
	if err != nil {
		return err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return err
			}
		}
	}
	return nil
}

// committed returns the group's committed offset of partition 0 of "t", -1 for none.
func committed(c *kfake.Cluster, group string) int64 {
	info := c.GroupInfo(group)
	if info == nil {
		return -1
	}
	if gc, ok := info.Commits["t"][0]; ok {
		return gc.Offset
	}
	return -1
}
