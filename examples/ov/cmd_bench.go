package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/streamledger/streamledger/internal/ovharness/bench"
)

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newFlags("bench", "End-to-end benchmark: a pre-produced feed through the real client and an in-process broker\n"+
		"into Postgres (own schema, dropped after), beside a raw consumer of the same feed; scaling over\n"+
		"partitions and over open windows (multiples of the seed's 6,994). Prints two tables; --json writes them.", stderr)
	var o bench.Options
	var bufferLimit, child string
	f.FlagSet.StringVar(&o.DSN, "dsn", envOr("DATABASE_URL", DefaultDatabaseURL), "Postgres connection string ($DATABASE_URL)")
	f.FlagSet.BoolVar(&o.Quick, "quick", false, "a run of about a minute: 1 and 6 partitions at 1x, and 10x")
	f.FlagSet.StringVar(&o.JSONOut, "json", "", "write the results as JSON to this file")
	f.FlagSet.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the pipeline phase to this file (FILE.<case> when several cases run)")
	f.FlagSet.StringVar(&o.Timeline, "timeline", "", "write a JSON line per tick and per write of the pipeline phase to this file (FILE.<case> when several cases run): waits, writes, the collector's CPU and the live heap")
	f.FlagSet.StringVar(&o.Trace, "trace", "", "write an execution trace (go tool trace) of the pipeline phase to this file (FILE.<case> when several cases run)")
	f.FlagSet.StringVar(&o.MemProfile, "memprofile", "", "write an allocation profile to this file at the end (FILE.<case> from each child process), and the heap at the largest live-heap probe to FILE.<case>.probe")
	f.FlagSet.StringVar(&o.Partitions, "partitions", "", "partition counts of the partition sweep at 1x (default 1,2,6,12; quick: 1,6)")
	f.FlagSet.StringVar(&o.Sizes, "sizes", "", "sizes of the open-window sweep, multiples of 6,994 (default 1,10,100; quick: 1,10)")
	f.FlagSet.IntVar(&o.SizePartitions, "size-partitions", 6, "partitions of the size sweep")
	f.FlagSet.Float64Var(&o.Scale1x, "scale-1x", 0.5, "feed scale that opens about 6,994 (window, key) aggregates at once over 6 partitions")
	f.FlagSet.DurationVar(&o.Duration, "duration", 0, "simulated span of the partition sweep's feed (default 30m)")
	f.FlagSet.DurationVar(&o.SizeDuration, "size-duration", 0, "simulated span of the larger sizes' feeds (default: 10m at 10x, 7m30s at 100x; quick: 7m30s)")
	f.FlagSet.DurationVar(&o.FlushInterval, "flush-interval", bench.DefaultFlushInterval, "the processor's tick (state flush, window writes, commits)")
	f.FlagSet.IntVar(&o.Seed, "seed", 1, "feed seed")
	f.FlagSet.BoolVar(&o.InProcess, "in-process", false, "consume in this process instead of a child process (RSS and GC then include the broker's copy of the feed)")
	f.FlagSet.StringVar(&child, "child", "", "internal: run the consuming phases of one case (a JSON spec) and print its result as JSON")
	f.FlagSet.StringVar(&bufferLimit, "buffer-limit", "0", "the pipeline's memory bound (bytes, or with KiB, MiB, GiB); the consuming process runs with ov run's garbage collector settings for it; 0: the runtime's default")
	f.FlagSet.StringVar(&o.Procs, "procs", "", "run each case once per GOMAXPROCS in this list (e.g. 1,2), one after the other, named CASE-gmpN; default: the process's")
	f.FlagSet.IntVar(&o.Repeat, "repeat", 1, "run the whole plan this many times, pass after pass (pass k's runs are named CASE#k), and print each case's median over the passes")
	f.FlagSet.StringVar(&o.Cases, "cases", "", "run only these cases (comma separated names, e.g. p6-1x,p6-100x)")
	if err := f.parse(args); err != nil {
		return err
	}
	if child != "" {
		spec, err := bench.ParseSpec(child)
		if err != nil {
			return fmt.Errorf("--child: %w", err)
		}
		// As ov run does, for the raw consumer and the pipeline alike.
		setGC(spec.Case.BufferLimit)
		ctx, stop := context.WithCancel(ctx)
		defer stop()
		go followLiveHeap(ctx, func(limit, live int64) {
			fmt.Fprintf(stderr, "%s: the live heap (%d MiB) outgrew the memory limit; it follows at %d MiB\n",
				spec.Case.Name, live>>20, limit>>20)
		})
		return bench.Child(ctx, o, spec, stdout, stderr)
	}
	limit, err := parseBytes(bufferLimit)
	if err != nil {
		fmt.Fprintln(stderr, fmt.Errorf("--buffer-limit: %w", err))
		return errUsage
	}
	o.BufferLimit = limit
	cases, err := bench.Plan(o)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return errUsage
	}
	var exe string
	if !o.InProcess {
		if exe, err = os.Executable(); err != nil {
			return fmt.Errorf("finding the ov binary for the child process: %w (--in-process avoids it)", err)
		}
	}
	return bench.RunPlan(ctx, o, cases, exe, stdout, stderr)
}
