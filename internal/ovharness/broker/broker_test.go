package broker

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) lines() []string { return strings.Split(strings.TrimSpace(s.String()), "\n") }

func TestParsePorts(t *testing.T) {
	for _, tc := range []struct {
		addrs string
		nodes int
		want  []int
		err   string
	}{
		{addrs: "127.0.0.1:9092", nodes: 1, want: []int{9092}},
		{addrs: "127.0.0.1:9092", nodes: 3, want: []int{9092, 9093, 9094}},
		{addrs: "127.0.0.1:0", nodes: 2, want: []int{0, 0}},
		{addrs: "127.0.0.1:7001,localhost:7005", nodes: 2, want: []int{7001, 7005}},
		{addrs: "127.0.0.1:7001,127.0.0.1:7002", nodes: 1, want: []int{7001, 7002}},
		{addrs: "127.0.0.1:1,127.0.0.1:2", nodes: 3, err: "2 addresses for 3 nodes"},
		{addrs: "10.0.0.1:9092", nodes: 1, err: "127.0.0.1 only"},
		{addrs: "127.0.0.1", nodes: 1, err: "expected host:port"},
		{addrs: "127.0.0.1:x", nodes: 1, err: "expected a port number"},
	} {
		got, err := ParsePorts(tc.addrs, tc.nodes)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.addrs)
			continue
		}
		require.NoError(t, err, tc.addrs)
		assert.Equal(t, tc.want, got, tc.addrs)
	}
}

func TestIsGeneration(t *testing.T) {
	for _, tc := range []struct {
		line, group, gen string
		ok               bool
	}{
		{GenerationLine("g", 3), "g", "3", true},
		{GenerationLine("g", 3), "h", "", false},
		{GenerationLine("g-2", 3), "g", "", false},
		{"broker listening on [127.0.0.1:1]", "g", "", false},
	} {
		gen, ok := IsGeneration(tc.line, tc.group)
		assert.Equal(t, tc.ok, ok, tc.line)
		if ok {
			assert.Equal(t, tc.gen, gen, tc.line)
		}
	}
}

// TestPrintsGenerations: a group's first member and a second one joining make two
// generations, each printed once however many members sync in it.
func TestPrintsGenerations(t *testing.T) {
	var out syncBuffer
	b, err := Start(Config{Topics: []string{"t"}, Partitions: 2, Log: &out})
	require.NoError(t, err)
	defer b.Close()
	member := func() *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.ListenAddrs()...), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"))
		require.NoError(t, err)
		go func() {
			for !cl.PollFetches(context.Background()).IsClientClosed() {
			}
		}()
		return cl
	}
	a := member()
	defer a.Close()
	require.Eventually(t, func() bool { return strings.Contains(out.String(), GenerationLine("g", 1)) }, 20*time.Second, 20*time.Millisecond)
	c := member()
	defer c.Close()
	require.Eventually(t, func() bool { return strings.Contains(out.String(), GenerationLine("g", 2)) }, 20*time.Second, 20*time.Millisecond)
	time.Sleep(200 * time.Millisecond) // the second member's SyncGroup of generation 2
	assert.Equal(t, 1, strings.Count(out.String(), GenerationLine("g", 2)), out.String())
}

// TestAdmin: faults are installed, counted and removed by name; bad names are refused; leaders
// move; groups are described.
func TestAdmin(t *testing.T) {
	b, err := Start(Config{Ports: []int{0, 0, 0}, Topics: []string{"t"}, Partitions: 2})
	require.NoError(t, err)
	defer b.Close()
	srv := httptest.NewServer(NewAdmin(b).Handler())
	defer srv.Close()
	c := NewClient(strings.TrimPrefix(srv.URL, "http://"))
	ctx := context.Background()

	for _, bad := range []FaultSpec{
		{Keys: []string{"NoSuchRequest"}, Err: "REQUEST_TIMED_OUT"},
		{Keys: []string{"Produce"}, Err: "NO_SUCH_ERROR"},
		{Err: "REQUEST_TIMED_OUT"},
	} {
		_, err := c.AddFault(ctx, bad)
		assert.Error(t, err, "%+v", bad)
	}
	id, err := c.AddFault(ctx, FaultSpec{Keys: []string{"Produce"}, Topic: "t", Err: "INVALID_RECORD", Count: 1})
	require.NoError(t, err)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.ListenAddrs()...), kgo.DefaultProduceTopic("t"))
	require.NoError(t, err)
	defer cl.Close()
	assert.ErrorContains(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(), "INVALID_RECORD")
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte("y")}).FirstErr(), "one request only")
	fs, err := c.Faults(ctx)
	require.NoError(t, err)
	require.Len(t, fs, 1)
	assert.Equal(t, 1, fs[0].Hits, "a fault of count 1 fails one request")
	st, err := c.RemoveFault(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, 1, st.Hits)
	_, err = c.RemoveFault(ctx, id)
	assert.Error(t, err, "already removed")

	id, err = c.AddFault(ctx, FaultSpec{Keys: []string{"Fetch"}, Err: "UNKNOWN_SERVER_ERROR", Count: -1})
	require.NoError(t, err)
	st, err = c.RemoveFault(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, "UNKNOWN_SERVER_ERROR", st.Spec.Err)

	require.NoError(t, c.MoveLeader(ctx, "t", 0, 2))
	assert.Equal(t, int32(2), b.LeaderFor("t", 0))
	assert.Error(t, c.MoveLeader(ctx, "t", 0, 7), "no node 7")
	require.NoError(t, c.ShuffleLeaders(ctx))
	require.NoError(t, c.RehashCoordinators(ctx))
	require.NoError(t, c.RemoveNode(ctx, 1))
	assert.Len(t, b.ListenAddrs(), 2)

	gs, err := c.Group(ctx, "nobody")
	require.NoError(t, err)
	assert.Equal(t, "Dead", gs.State)
}

// TestServeAdmin: the endpoint has no authentication, so it serves on loopback only.
func TestServeAdmin(t *testing.T) {
	b, err := Start(Config{Ports: []int{0}, Topics: []string{"t"}, Partitions: 1})
	require.NoError(t, err)
	defer b.Close()
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", ":0", "no-port"} {
		_, err := ServeAdmin(addr, b, io.Discard)
		assert.Error(t, err, addr)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	stop, err := ServeAdmin(addr, b, io.Discard)
	require.NoError(t, err)
	defer stop()
	gs, err := NewClient(addr).Group(context.Background(), "nobody")
	require.NoError(t, err)
	assert.Equal(t, "Dead", gs.State)
}
