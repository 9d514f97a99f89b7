package main

import (
	"context"
	"fmt"
	"io"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/examples/ov/feed"
	"github.com/streamledger/streamledger/internal/ovharness/broker"
)

func runBroker(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newFlags("broker", "A standalone Kafka-protocol broker (franz-go's kfake) with the OV topics and their dead-letter\n"+
		"topics, for local runs: start it in one terminal, then \"ov run\" and \"ov feed\" in others. It\n"+
		"outlives processor restarts; with --data-dir it also outlives its own (kill -9 included).\n"+
		"It prints a line for every new generation of a consumer group (a rebalance it ran), expires\n"+
		"the group members kfake would keep forever, and says when a rebalance runs long. Not for\n"+
		"production.", stderr)
	addr := f.String("addr", "OV_BROKER_ADDR", "127.0.0.1:9092", "listen address; with --nodes N the first of N consecutive ports, or a comma-separated list of one address per node (kfake listens on 127.0.0.1)")
	nodes := f.Int("nodes", "", 1, "number of broker nodes")
	partitions := f.Int("partitions", "", 8, "partitions of each topic")
	posTopic := f.String("positions-topic", "OV_POSITIONS_TOPIC", feed.DefaultPositionsTopic, "vehicle positions topic")
	predTopic := f.String("predictions-topic", "OV_PREDICTIONS_TOPIC", feed.DefaultPredictionsTopic, "arrival predictions topic")
	dataDir := f.String("data-dir", "OV_BROKER_DATA_DIR", "", "persist records, offsets and groups in this directory and load them at start; empty: in memory")
	syncWrites := f.Bool("sync-writes", "", false, "fsync every produced batch (with --data-dir): survives a machine crash, not only a killed process")
	consumerSession := f.Duration("consumer-session-timeout", "", 0, "KIP-848 groups: group.consumer.session.timeout.ms; 0: kfake's 45s")
	consumerHeartbeat := f.Duration("consumer-heartbeat-interval", "", 0, "KIP-848 groups: group.consumer.heartbeat.interval.ms; 0: kfake's 5s")
	noExpiry := f.Bool("no-expiry", "", false, "do not expire the members kfake never times out (reproduces the classic-protocol wedge)")
	adminAddr := f.String("admin-addr", "", "", "test hook: serve the reliability harness's endpoint (faults, leader moves, groups) on this loopback address; empty: none")
	if err := f.parse(args); err != nil {
		return err
	}
	ports, err := broker.ParsePorts(*addr, *nodes)
	if err != nil {
		return err
	}
	b, err := broker.Start(broker.Config{Ports: ports, Topics: []string{*posTopic, *predTopic}, Partitions: int32(*partitions),
		DataDir: *dataDir, SyncWrites: *syncWrites, ConsumerSessionTimeout: *consumerSession,
		ConsumerHeartbeatInterval: *consumerHeartbeat, NoExpiry: *noExpiry, Log: stdout})
	if err != nil {
		return err
	}
	defer b.Close()
	if *adminAddr != "" {
		stop, err := broker.ServeAdmin(*adminAddr, b, stderr)
		if err != nil {
			return err
		}
		defer stop()
	}
	where := "in memory"
	if *dataDir != "" {
		where = "persisted in " + *dataDir
	}
	fmt.Fprintf(stdout, "broker listening on %v (%s) with %d partitions per topic: %s, %s, %s, %s\n", b.ListenAddrs(), where,
		*partitions, *posTopic, *predTopic, dlq.DefaultTopic(*posTopic), dlq.DefaultTopic(*predTopic))
	fmt.Fprintln(stdout, "stop it with Ctrl-C")
	<-ctx.Done()
	return nil
}
