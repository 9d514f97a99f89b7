package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/examples/ov/internal/feed"
)

func runBroker(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newFlags("broker", "A standalone Kafka-protocol broker (franz-go's kfake, in memory) with the OV topics and their\n"+
		"dead-letter topics, for local runs: start it in one terminal, then \"ov run\" and \"ov feed\" in\n"+
		"others. It outlives processor restarts; its data lives until it stops. Not for production.", stderr)
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
