package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/streamledger/streamledger/examples/ov/feed"
	"github.com/streamledger/streamledger/internal/ovharness/produce"
)

func runFeed(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newFlags("feed", "The simulated national feed of vehicle positions and arrival predictions, deterministic for a\n"+
		"seed. Writes to a broker (explicit partitions by Kafka's murmur2 of the key, idempotent producer)\n"+
		"or, with --out, to a JSONL file; --from replays such a file instead of simulating.\n\n"+
		"  ov feed --duration 2h --speed 60                   an accelerated morning into the local broker\n"+
		"  ov feed --duration 24h --scale 0.1 --out day.jsonl a day of a smaller network, to a file\n"+
		"  ov feed --from day.jsonl --speed 1                 replay the file in real time", stderr)
	brokers := f.String("brokers", "OV_BROKERS", "127.0.0.1:9092", "Kafka bootstrap servers")
	posTopic := f.String("positions-topic", "OV_POSITIONS_TOPIC", feed.DefaultPositionsTopic, "vehicle positions topic")
	predTopic := f.String("predictions-topic", "OV_PREDICTIONS_TOPIC", feed.DefaultPredictionsTopic, "arrival predictions topic")
	out := f.String("out", "", "", `write JSONL to this file ("-" for stdout) instead of a broker`)
	from := f.String("from", "", "", "replay this JSONL file instead of simulating")
	seed := f.Int("seed", "", 1, "random seed: the same flags give the same feed")
	start := f.String("start", "", "05:00", "simulated start: HH:MM on Tuesday 10 March 2026 (CET), or RFC 3339")
	duration := f.Duration("duration", "", time.Hour, "simulated time covered")
	scale := f.Float("scale", "", 1, "network size: 1 is national (5,000 vehicles at the peak), 0.1 a tenth")
	speed := f.Float("speed", "", 0, "simulated seconds per second: 1 real time, 60 a minute per second, 0 as fast as possible")
	lateShare := f.Float("late-share", "", feed.SuggestedLateShare, "share of predictions delivered beyond the lateness")
	malformedShare := f.Float("malformed-share", "", feed.SuggestedMalformedShare, "share of malformed messages (dead letters)")
	disorderShare := f.Float("disorder-share", "", feed.SuggestedDisorderShare, "share of messages delayed within --max-disorder")
	maxDisorder := f.Duration("max-disorder", "", feed.DefaultMaxDisorder, "largest delay of a message that is not meant to be late")
	windowSize := f.Duration("window", "", feed.DefaultWindowSize, "the processor's window, to place late messages beyond it")
	lateness := f.Duration("lateness", "", feed.DefaultLateness, "the processor's lateness, to place late messages beyond it")
	createTopics := f.Bool("create-topics", "", false, "create missing topics (and their dlq.<topic>) with --partitions")
	partitions := f.Int("partitions", "", 8, "partitions of created topics")
	if err := f.parse(args); err != nil {
		return err
	}
	src, err := openFeedSource(*from, *start, feed.Config{Seed: uint64(*seed), Duration: *duration, Scale: *scale,
		PositionsTopic: *posTopic, PredictionsTopic: *predTopic, WindowSize: *windowSize, Lateness: *lateness,
		MaxDisorder: *maxDisorder, DisorderShare: *disorderShare, LateShare: *lateShare, MalformedShare: *malformedShare})
	if err != nil {
		return err
	}
	defer src.close()
	var dst feedSink
	if *out != "" {
		dst, err = fileSink(*out, stdout)
	} else {
		dst, err = brokerSink(ctx, *brokers, []string{*posTopic, *predTopic}, *createTopics, *partitions, stderr)
	}
	if err != nil {
		return err
	}
	defer dst.close()
	n, last, err := pumpFeed(ctx, &feed.Pacer{Speed: *speed}, src, dst, *out != "-", stderr)
	if err != nil {
		return err
	}
	if err := dst.finish(); err != nil {
		return err
	}
	if *out != "-" {
		fmt.Fprintf(stderr, "%d records up to %s%s\n", n, last.In(feed.CET()).Format(time.RFC3339), src.stats())
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "interrupted")
	}
	return nil
}

// feedSource is where the feed command's records come from: a JSONL file or the simulator.
type feedSource struct {
	next  func() (feed.Record, error) // io.EOF after the last record
	stats func() string               // what the simulator made, for the closing line
	close func() error
}

// openFeedSource replays the JSONL file from, or, when from is empty, simulates the feed of cfg
// from the start given as HH:MM on the default day or in RFC 3339.
func openFeedSource(from, start string, cfg feed.Config) (feedSource, error) {
	if from != "" {
		file, err := os.Open(from)
		if err != nil {
			return feedSource{}, err
		}
		rd := feed.NewReader(file)
		return feedSource{next: rd.Next, stats: func() string { return "" }, close: file.Close}, nil
	}
	st, err := parseStart(start, feed.DefaultStart())
	if err != nil {
		return feedSource{}, err
	}
	cfg.Start = st
	g, err := feed.New(cfg)
	if err != nil {
		return feedSource{}, err
	}
	next := func() (feed.Record, error) {
		r, ok := g.Next()
		if !ok {
			return feed.Record{}, io.EOF
		}
		return r, nil
	}
	stats := func() string {
		s := g.Stats()
		return fmt.Sprintf(" (%d positions, %d predictions; %d meant late, %d malformed; %d trips, at most %d vehicles)",
			s.Positions, s.Predictions, s.Late, s.Malformed, s.Trips, s.PeakVehicles)
	}
	return feedSource{next: next, stats: stats, close: func() error { return nil }}, nil
}

// feedSink is where the feed command's records go: a JSONL file or a broker.
type feedSink struct {
	send   func(feed.Record) error
	finish func() error // delivers what was sent: flushes the file, or waits for the broker
	close  func()
}

// fileSink writes JSON lines to the file out, or to stdout when out is "-".
func fileSink(out string, stdout io.Writer) (feedSink, error) {
	w, closeFile := io.Writer(stdout), func() {}
	if out != "-" {
		file, err := os.Create(out)
		if err != nil {
			return feedSink{}, err
		}
		w, closeFile = file, func() { file.Close() }
	}
	jw := feed.NewWriter(w)
	return feedSink{send: jw.Write, finish: jw.Flush, close: closeFile}, nil
}

// brokerSink produces to the topics at brokers, creating them (and their dead-letter topics)
// with the given partitions first when create is set. Its finish waits 30 s at most for the
// broker's confirmations and reports them on stderr.
func brokerSink(ctx context.Context, brokers string, topics []string, create bool, partitions int, stderr io.Writer) (feedSink, error) {
	if create {
		if err := ensureTopics(ctx, brokers, nil, topics, partitions); err != nil {
			return feedSink{}, err
		}
	}
	p, err := produce.New(ctx, brokers, topics, quietKafka())
	if err != nil {
		return feedSink{}, err
	}
	finish := func() error {
		fctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := p.Flush(fctx); err != nil {
			return err
		}
		delivered, failed := p.Counts()
		fmt.Fprintf(stderr, "broker confirmed %d records, %d failed\n", delivered, failed)
		return nil
	}
	return feedSink{send: func(r feed.Record) error { return p.Send(ctx, r) }, finish: finish,
		close: func() { p.Close(10 * time.Second) }}, nil
}

// pumpFeed sends src's records to dst, each at its timestamp on the pacer's clock, until the
// source ends or ctx does (what was sent is then still delivered by the caller). With report
// it prints the progress to stderr every 5 s. It returns the count sent and the last
// record's timestamp.
func pumpFeed(ctx context.Context, pacer *feed.Pacer, src feedSource, dst feedSink, report bool, stderr io.Writer) (int, time.Time, error) {
	n := 0
	lastReport := time.Now()
	var last time.Time
	for {
		r, err := src.next()
		if errors.Is(err, io.EOF) {
			return n, last, nil
		}
		if err != nil {
			return n, last, err
		}
		if err := pacer.Wait(ctx, r.Timestamp); err != nil {
			return n, last, nil // interrupted: deliver what was sent, then stop
		}
		if err := dst.send(r); err != nil {
			if ctx.Err() != nil {
				return n, last, nil
			}
			return n, last, err
		}
		n++
		last = r.Timestamp
		if report && time.Since(lastReport) >= 5*time.Second {
			lastReport = time.Now()
			fmt.Fprintf(stderr, "%s  %d records\n", last.In(feed.CET()).Format("15:04:05"), n)
		}
	}
}

// quietKafka keeps librdkafka's own logging to warnings.
func quietKafka() kafka.ConfigMap { return kafka.ConfigMap{"log_level": 4} }

// ensureTopics creates the topics and their dead-letter topics that do not exist.
func ensureTopics(ctx context.Context, brokers string, extra kafka.ConfigMap, topics []string, partitions int) error {
	cfg := kafka.ConfigMap{"bootstrap.servers": brokers}
	for k, v := range extra {
		cfg[k] = v
	}
	admin, err := kafka.NewAdminClient(&cfg)
	if err != nil {
		return err
	}
	defer admin.Close()
	var specs []kafka.TopicSpecification
	for _, t := range topics {
		for _, name := range []string{t, "dlq." + t} {
			specs = append(specs, kafka.TopicSpecification{Topic: name, NumPartitions: partitions, ReplicationFactor: -1})
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	res, err := admin.CreateTopics(cctx, specs)
	if err != nil {
		return fmt.Errorf("creating topics: %w", err)
	}
	for _, r := range res {
		if r.Error.Code() != kafka.ErrNoError && r.Error.Code() != kafka.ErrTopicAlreadyExists {
			return fmt.Errorf("creating topic %s: %w", r.Topic, r.Error)
		}
	}
	return nil
}
