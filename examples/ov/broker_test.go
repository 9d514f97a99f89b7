package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamledger/streamledger/examples/ov/internal/chaos"
)

// TestBrokerPrintsGenerations: a group's first member and a second one joining make two
// generations, each printed once however many members sync in it.
func TestBrokerPrintsGenerations(t *testing.T) {
	c, err := startBroker(0, 2, "t")
	require.NoError(t, err)
	defer c.Close()
	var out syncBuffer
	watchGenerations(c, &out)

	member := func() *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"))
		require.NoError(t, err)
		go func() {
			for !cl.PollFetches(context.Background()).IsClientClosed() {
			}
		}()
		return cl
	}
	a := member()
	defer a.Close()
	require.Eventually(t, func() bool { return strings.Contains(out.String(), chaos.GenerationLine("g", 1)) }, 20*time.Second, 20*time.Millisecond)
	b := member()
	defer b.Close()
	require.Eventually(t, func() bool { return strings.Contains(out.String(), chaos.GenerationLine("g", 2)) }, 20*time.Second, 20*time.Millisecond)
	time.Sleep(200 * time.Millisecond) // the second member's SyncGroup of generation 2
	assert.Equal(t, 1, strings.Count(out.String(), chaos.GenerationLine("g", 2)), out.String())
}
