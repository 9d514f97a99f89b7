package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/dlq/dlqkafka"
	"github.com/streamledger/streamledger/examples/ov/feed"
	"github.com/streamledger/streamledger/internal/truncate"
)

func runReplayDLQ(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newFlags("replay-dlq", "Republishes the dead letters of the OV topics to their original topic and partition, with\n"+
		"their original key, value, headers and (by default) timestamp, once the cause is fixed. The\n"+
		"replay's consumer group remembers how far it got; a letter replayed --max-replays times that\n"+
		"failed again is refused. --dry-run reads and decides the same way, publishes nothing, and\n"+
		"lists the letters grouped by error class.", stderr)
	brokers := f.String("brokers", "OV_BROKERS", "127.0.0.1:9092", "Kafka bootstrap servers")
	topics := f.String("topics", "", feed.DefaultPositionsTopic+","+feed.DefaultPredictionsTopic,
		"source topics whose dlq.<topic> to replay, comma separated")
	group := f.String("group", "", "", "replay cursor group; empty: streamledger-replay.<dead-letter topic>")
	target := f.String("target-topic", "", "", "republish to this topic instead of each letter's original topic")
	dryRun := f.Bool("dry-run", "", false, "decide and report, publish and commit nothing")
	list := f.Bool("list", "", false, "print every letter as it is decided")
	classes := f.String("classes", "", "", "replay only these error classes, comma separated (e.g. schema.version)")
	maxReplays := f.Int("max-replays", "", 3, "refuse letters replayed this many times already")
	limit := f.Int("limit", "", 0, "stop after replaying this many letters; 0: no limit")
	failedFrom := f.String("failed-from", "", "", "only letters that failed at or after this time (RFC 3339)")
	failedBefore := f.String("failed-before", "", "", "only letters that failed before this time (RFC 3339)")
	keepTS := f.Bool("keep-timestamp", "", true, "republish with the original timestamp (event times are checked against it)")
	if err := f.parse(args); err != nil {
		return err
	}
	policy := dlq.Policy{MaxReplays: *maxReplays, Limit: *limit}
	if *classes != "" {
		policy.Classes = splitList(*classes)
	}
	for _, b := range []struct {
		s   string
		dst *time.Time
	}{{*failedFrom, &policy.FailedFrom}, {*failedBefore, &policy.FailedBefore}} {
		if b.s == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, b.s)
		if err != nil {
			return fmt.Errorf("time %q: %w", b.s, err)
		}
		*b.dst = t
	}
	if err := policy.Validate(); err != nil {
		return err
	}
	for _, src := range splitList(*topics) {
		topic := dlq.DefaultTopic(src)
		cfg := dlqkafka.ReplayConfig{
			Kafka:         quietKafka(),
			Topic:         topic,
			Group:         *group,
			TargetTopic:   *target,
			Policy:        policy,
			DryRun:        *dryRun,
			KeepTimestamp: *keepTS,
			OnError:       func(err error) { fmt.Fprintf(stderr, "replay %s: %v\n", topic, err) },
		}
		cfg.Kafka["bootstrap.servers"] = *brokers
		if *list {
			cfg.OnEntry = func(e dlqkafka.Entry) {
				if e.Err != nil {
					fmt.Fprintf(stdout, "%s[%d]@%d  not a dead letter: %v\n", topic, e.Partition, e.Offset, e.Err)
					return
				}
				l := e.Letter
				fmt.Fprintf(stdout, "%s[%d]@%d  %-7s %s  %-22s %s\n", topic, e.Partition, e.Offset, e.Decision, l.Record,
					l.ErrorClass, truncate.Message(l.ErrorMessage, 120))
			}
		}
		report, err := dlqkafka.Replay(ctx, cfg)
		fmt.Fprintf(stdout, "%s:\n", topic)
		if _, werr := report.WriteTo(stdout); werr != nil {
			return werr
		}
		if err != nil {
			return fmt.Errorf("replaying %s: %w", topic, err)
		}
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
