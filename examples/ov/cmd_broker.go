package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/examples/ov/internal/chaos"
	"github.com/streamledger/streamledger/examples/ov/internal/feed"
)

func runBroker(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newFlags("broker", "A standalone Kafka-protocol broker (franz-go's kfake, in memory) with the OV topics and their\n"+
		"dead-letter topics, for local runs: start it in one terminal, then \"ov run\" and \"ov feed\" in\n"+
		"others. It outlives processor restarts; its data lives until it stops. Not for production.\n"+
		"It prints a line for every new generation of a consumer group (a rebalance it ran).", stderr)
	addr := f.String("addr", "OV_BROKER_ADDR", "127.0.0.1:9092", "listen address (kfake listens on 127.0.0.1)")
	partitions := f.Int("partitions", "", 8, "partitions of each topic")
	posTopic := f.String("positions-topic", "OV_POSITIONS_TOPIC", feed.DefaultPositionsTopic, "vehicle positions topic")
	predTopic := f.String("predictions-topic", "OV_PREDICTIONS_TOPIC", feed.DefaultPredictionsTopic, "arrival predictions topic")
	if err := f.parse(args); err != nil {
		return err
	}
	host, portStr, err := net.SplitHostPort(*addr)
	if err != nil {
		return err
	}
	if host != "127.0.0.1" && host != "localhost" && host != "" {
		return fmt.Errorf("kfake listens on 127.0.0.1 only, not %q", host)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return fmt.Errorf("port %q: %w", portStr, err)
	}
	c, err := startBroker(port, int32(*partitions), *posTopic, *predTopic)
	if err != nil {
		return err
	}
	defer c.Close()
	watchGenerations(c, stdout)
	fmt.Fprintf(stdout, "broker listening on %v with %d partitions per topic: %s, %s, %s, %s\n", c.ListenAddrs(), *partitions,
		*posTopic, *predTopic, dlq.DefaultTopic(*posTopic), dlq.DefaultTopic(*predTopic))
	fmt.Fprintln(stdout, "stop it with Ctrl-C")
	<-ctx.Done()
	return nil
}

// startBroker runs a kfake cluster on port (0: any) with the OV topics and their dead-letter
// topics.
func startBroker(port int, partitions int32, topics ...string) (*kfake.Cluster, error) {
	var all []string
	for _, t := range topics {
		all = append(all, t, dlq.DefaultTopic(t))
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.SeedTopics(partitions, all...))
	if err != nil {
		return nil, fmt.Errorf("starting the broker on port %d: %w", port, err)
	}
	return c, nil
}

// watchGenerations prints a line to w for every new (group, generation) that a SyncGroup
// request names: each is a rebalance the broker ran, which is what the reliability harness
// counts, rather than the membership changes it caused (a change during a rebalance joins it;
// a static member's restart needs none; an incremental cooperative rebalance takes two). The
// control function only observes: it returns false, so kfake handles every request itself, and
// an unhandled control function stays registered.
func watchGenerations(c *kfake.Cluster, w io.Writer) {
	var mu sync.Mutex
	type key struct {
		group      string
		generation int32
	}
	seen := map[key]bool{}
	c.ControlKey(kmsg.SyncGroup.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		r, ok := req.(*kmsg.SyncGroupRequest)
		if !ok {
			return nil, nil, false
		}
		mu.Lock()
		defer mu.Unlock()
		if k := (key{r.Group, r.Generation}); !seen[k] {
			seen[k] = true
			fmt.Fprintln(w, chaos.GenerationLine(r.Group, r.Generation))
		}
		return nil, nil, false
	})
}
