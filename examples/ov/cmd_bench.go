package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/streamledger/streamledger/examples/ov/internal/bench"
	"github.com/streamledger/streamledger/examples/ov/internal/tables"
	"github.com/streamledger/streamledger/ledger/consumer"
)

// benchOptions holds ov bench's flags.
type benchOptions struct {
	dsn                 string
	quick               bool
	jsonOut             string
	cpuProfile, memProf string
	partitions, sizes   string
	basePartitions      int
	scale1x             float64
	duration, sizeSpan  time.Duration
	flush               time.Duration
	seed                int
	compare             bool
	only                string
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newFlags("bench", "End-to-end benchmark: a pre-produced feed through the real client and an in-process broker\n"+
		"into Postgres (own schema, dropped after), beside a raw consumer of the same feed; scaling over\n"+
		"partitions and over open windows (multiples of the seed's 6,994). Prints two tables; --json writes them.", stderr)
	var o benchOptions
	f.FlagSet.StringVar(&o.dsn, "dsn", envOr("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"), "Postgres connection string ($DATABASE_URL)")
	f.FlagSet.BoolVar(&o.quick, "quick", false, "a run of about a minute: 1 and 6 partitions at 1x, and 10x")
	f.FlagSet.StringVar(&o.jsonOut, "json", "", "write the results as JSON to this file")
	f.FlagSet.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the pipeline phase to this file (FILE.<case> when several cases run)")
	f.FlagSet.StringVar(&o.memProf, "memprofile", "", "write an allocation profile (alloc_space) to this file at the end")
	f.FlagSet.StringVar(&o.partitions, "partitions", "", "partition counts of the partition sweep at 1x (default 1,2,6,12; quick: 1,6)")
	f.FlagSet.StringVar(&o.sizes, "sizes", "", "sizes of the open-window sweep, multiples of 6,994 (default 1,10,100; quick: 1,10)")
	f.FlagSet.IntVar(&o.basePartitions, "size-partitions", 6, "partitions of the size sweep")
	f.FlagSet.Float64Var(&o.scale1x, "scale-1x", 0.5, "feed scale that opens about 6,994 (window, key) aggregates at once over 6 partitions")
	f.FlagSet.DurationVar(&o.duration, "duration", 0, "simulated span of the partition sweep's feed (default 30m; quick: 10m)")
	f.FlagSet.DurationVar(&o.sizeSpan, "size-duration", 0, "simulated span of the larger sizes' feeds (default: 10m at 10x, 7m30s at 100x; quick: 7m30s)")
	f.FlagSet.DurationVar(&o.flush, "flush-interval", bench.DefaultFlushInterval, "the processor's tick (state flush, window writes, commits)")
	f.FlagSet.IntVar(&o.seed, "seed", 1, "feed seed")
	f.FlagSet.BoolVar(&o.compare, "compare-handlers", false, "run each case twice, with the OV handlers before the profile (-former) and now, in that order")
	f.FlagSet.StringVar(&o.only, "cases", "", "run only these cases (comma separated names, e.g. p6-1x,p6-100x)")
	if err := f.parse(args); err != nil {
		return err
	}
	cases, err := benchPlan(o)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return errUsage
	}

	if o.memProf != "" {
		runtime.MemProfileRate = 64 << 10
	}

	mode := "full"
	if o.quick {
		mode = "quick"
	}
	rep := bench.NewReport(mode)
	cfg := bench.Config{DSN: o.dsn, FlushInterval: o.flush, Progress: stdout,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	fmt.Fprintf(stdout, "ov bench (%s): %d cases on %d CPUs, flush every %s\n", mode, len(cases), runtime.NumCPU(), o.flush)
	began := time.Now()
	if o.cpuProfile != "" {
		cfg.AroundPipeline = func(c bench.Case) func() {
			name := o.cpuProfile
			if len(cases) > 1 || o.compare {
				name += "." + c.Name
			}
			pf, err := os.Create(name)
			if err != nil {
				fmt.Fprintf(stderr, "cpu profile: %v\n", err)
				return func() {}
			}
			if err := pprof.StartCPUProfile(pf); err != nil {
				fmt.Fprintf(stderr, "cpu profile: %v\n", err)
				pf.Close()
				return func() {}
			}
			return func() {
				pprof.StopCPUProfile()
				pf.Close()
			}
		}
	}
	var former func(string, consumer.Handler[tables.Key]) consumer.Handler[tables.Key]
	if o.compare {
		var err error
		if former, err = bench.FormerHandlers(); err != nil {
			return err
		}
	}
	for _, c := range cases {
		runs := []bench.Case{c}
		if o.compare {
			fc := c
			fc.Name += "-former"
			runs = []bench.Case{fc, c}
		}
		for i, rc := range runs {
			rcfg := cfg
			if o.compare && i == 0 {
				rcfg.Handlers = former
			}
			res, err := bench.Run(ctx, rcfg, rc)
			if err != nil {
				return fmt.Errorf("case %s: %w", rc.Name, err)
			}
			rep.Cases = append(rep.Cases, res)
		}
	}
	fmt.Fprintf(stdout, "\ndone in %s\n\n", time.Since(began).Round(time.Second))
	if err := rep.WriteTables(stdout); err != nil {
		return err
	}
	if o.jsonOut != "" {
		jf, err := os.Create(o.jsonOut)
		if err != nil {
			return err
		}
		if err := rep.WriteJSON(jf); err != nil {
			jf.Close()
			return err
		}
		if err := jf.Close(); err != nil {
			return err
		}
	}
	if o.memProf != "" {
		mf, err := os.Create(o.memProf)
		if err != nil {
			return err
		}
		defer mf.Close()
		if err := pprof.Lookup("allocs").WriteTo(mf, 0); err != nil {
			return err
		}
	}
	return nil
}

// benchPlan lists the cases: the partition sweep at 1x, then the size sweep.
func benchPlan(o benchOptions) ([]bench.Case, error) {
	parts, sizes := "1,2,6,12", "1,10,100"
	if o.quick {
		parts, sizes = "1,6", "1,10"
	}
	if o.duration == 0 {
		o.duration = 30 * time.Minute
		if o.quick {
			o.duration = 10 * time.Minute
		}
	}
	if o.partitions != "" {
		parts = o.partitions
	}
	if o.sizes != "" {
		sizes = o.sizes
	}
	ps, err := parseList(parts)
	if err != nil {
		return nil, fmt.Errorf("--partitions: %w", err)
	}
	ss, err := parseList(sizes)
	if err != nil {
		return nil, fmt.Errorf("--sizes: %w", err)
	}
	want := map[string]bool{}
	for _, n := range strings.Split(o.only, ",") {
		if n = strings.TrimSpace(n); n != "" {
			want[n] = true
		}
	}
	var cases []bench.Case
	seen := map[string]bool{}
	add := func(c bench.Case) {
		if seen[c.Name] || (len(want) > 0 && !want[c.Name]) {
			return
		}
		seen[c.Name] = true
		cases = append(cases, c)
	}
	for _, p := range ps {
		add(bench.Case{Name: fmt.Sprintf("p%d-1x", int(p)), Size: 1, Scale: o.scale1x, Partitions: int(p),
			Duration: o.duration, Seed: uint64(o.seed)})
	}
	for _, s := range ss {
		d := o.sizeSpan
		if d == 0 {
			switch {
			case s <= 1:
				d = o.duration
			case s <= 10 && !o.quick:
				d = 10 * time.Minute
			default:
				d = 7*time.Minute + 30*time.Second
			}
		}
		add(bench.Case{Name: fmt.Sprintf("p%d-%gx", o.basePartitions, s), Size: s, Scale: scaleFor(o.scale1x, s),
			Partitions: o.basePartitions, Duration: d, Seed: uint64(o.seed)})
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("no case selected by --cases %q", o.only)
	}
	return cases, nil
}

// scaleFor is the feed scale that opens about size times the 1x open windows. Open keys grow a
// little faster than the scale (a larger network has more stops per vehicle), about as
// scale^1.15: measured 5,566 at 0.4, 18,803 at 1.2 and 100,586 at 5 over 6 partitions.
func scaleFor(scale1x, size float64) float64 {
	return math.Round(scale1x*math.Pow(size, 1/1.15)*100) / 100
}

func parseList(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, v)
	}
	return out, nil
}
