package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/streamledger/streamledger/examples/credits/internal/bench"
)

func benchCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg bench.Config
	fs.StringVar(&cfg.DSN, "database", databaseURL(), "Postgres URL; DATABASE_URL sets the default (each run uses a schema of its own, dropped after)")
	fs.IntVar(&cfg.Feed.Credits, "credits", 1_000_000, "credits in the feed")
	fs.IntVar(&cfg.Feed.Accounts, "accounts", 10_000, "accounts, opened with balance 0")
	fs.IntVar(&cfg.Feed.Partitions, "partitions", 8, "partitions of the topic; each account's credits go to one")
	fs.Float64Var(&cfg.Feed.Duplicates, "duplicates", 0.10, "share of credits sent again")
	fs.Float64Var(&cfg.Feed.Conflicts, "conflicts", 0.01, "share of earlier ids reused for another amount")
	fs.Float64Var(&cfg.Feed.Unknown, "unknown", 0.02, "share of credits to accounts that do not exist")
	batches := fs.String("batches", "16,64,256,1024", "batch sizes to measure, one run through the feed each")
	fs.IntVar(&cfg.Workers, "workers", 0, "partitions applied at once, each on its own connection [the partitions]")
	fs.DurationVar(&cfg.CommitInterval, "commit-interval", 100*time.Millisecond, "the service's commit interval")
	fs.IntVar(&cfg.PacedRate, "paced-rate", 0, "credits/s of the latency run [half the best rate]; negative skips it")
	fs.DurationVar(&cfg.PacedFor, "paced-for", 10*time.Second, "how long the latency run produces")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole benchmark to this file")
	verbose := fs.Bool("v", false, "the services' logs to stderr")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	var err error
	if cfg.Batches, err = parseInts(*batches); err != nil {
		return fmt.Errorf("%w: -batches: %v", errUsage, err)
	}
	cfg.Progress = stdout
	if *verbose {
		cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	fmt.Fprintf(stdout, "credits bench: in-process broker, database %s\n", redact(cfg.DSN))
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	return res.WriteTable(stdout)
}

// parseInts reads "16,64,256".
func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n == 0 {
			return nil, fmt.Errorf("a list of non-zero integers expected, found %q", s)
		}
		out = append(out, n)
	}
	return out, nil
}
