// Command ov is the OV example of streamledger: the whole pipeline for Dutch public transport
// in one binary. Vehicle positions and arrival predictions go from Kafka into 5-minute windows
// of delay per line, station, operator and network, and into the latest position of each
// vehicle and delay of each trip, in Postgres, with offsets committed only past what is
// durable.
//
// Usage:
//
//	ov demo        in-process broker + simulated feed + processor against Postgres; a live
//	               progress line and a final report (the quickest way to see it work)
//	ov run         the processor: Kafka in, Postgres out, /metrics and /healthz
//	ov feed        the simulated national feed, to a broker or a JSONL file (--from replays one)
//	ov broker      a standalone Kafka-protocol broker (kfake) on 127.0.0.1:9092 with the topics
//	ov replay-dlq  republish dead letters to their topic (--dry-run lists them by error class)
//	ov chaos       the reliability harness
//	ov bench       end-to-end benchmark against a raw consumer, scaling and memory (--quick, --json)
//
// Run "ov <command> -h" for a command's flags; every flag of run can also be set by the
// environment variable shown in its help.
//
// The pipeline is in the packages beside this command: pipeline (the wiring), tables (the
// tables and each event's keys and rows), event (the messages and their decoder) and feed (the
// simulator). The broker, chaos and bench commands drive the example's harness, which lives in
// the repository's internal/ovharness.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"demo", "in-process broker, simulated feed and processor against Postgres, with a final report", runDemo},
		{"run", "the processor: Kafka in, Postgres out, with /metrics and /healthz", runProcessor},
		{"feed", "the simulated national feed, to a broker or a JSONL file; --from replays a file", runFeed},
		{"broker", "a standalone Kafka-protocol broker (kfake) with the OV topics, for local runs", runBroker},
		{"replay-dlq", "republish dead letters to their original topic; --dry-run lists them by error class", runReplayDLQ},
		{"chaos", "the reliability harness: kills, rebalances, outages, compared with the oracle", runChaos},
		{"bench", "end-to-end benchmark: pipeline vs raw consume, stages, scaling, memory per open window", runBench},
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: ov <command> [flags]")
	fmt.Fprintln(w)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Start with "ov demo" (needs Postgres at $DATABASE_URL); "ov <command> -h" shows a command's flags.`)
}

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

// realMain runs one command and returns the exit status: 0 on success, 2 for a usage error, 1
// for any other failure.
func realMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		ctx, stop := signalContext()
		defer stop()
		err := c.run(ctx, args[1:], stdout, stderr)
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			return 2
		}
		fmt.Fprintf(stderr, "ov %s: %v\n", c.name, err)
		return 1
	}
	fmt.Fprintf(stderr, "ov: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

// errUsage marks a command-line mistake whose message was already printed.
var errUsage = errors.New("usage error")

// signalContext is cancelled at the first SIGINT or SIGTERM. A command that can shut down
// gracefully watches for a second signal itself (see secondSignal).
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// secondSignal calls abort when a signal arrives after ctx was cancelled by the first one,
// so that an operator can cut a slow graceful shutdown short.
func secondSignal(ctx context.Context, abort func()) (stop func()) {
	ch := make(chan os.Signal, 1)
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-done:
			return
		}
		signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
		select {
		case <-ch:
			abort()
		case <-done:
		}
	}()
	return func() {
		close(done)
		signal.Stop(ch)
	}
}
