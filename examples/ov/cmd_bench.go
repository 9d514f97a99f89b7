package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"time"

	"github.com/streamledger/streamledger/examples/ov/internal/bench"
)

// benchOptions holds ov bench's flags.
type benchOptions struct {
	dsn                 string
	quick               bool
	jsonOut             string
	cpuProfile, memProf string
	trace               string
	partitions, sizes   string
	basePartitions      int
	scale1x             float64
	duration, sizeSpan  time.Duration
	flush               time.Duration
	seed                int
	procs               string
	bufferLimit         string
	only                string
	repeat              int
	inProcess           bool
	child               string
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
	f.FlagSet.StringVar(&o.trace, "trace", "", "write an execution trace (go tool trace) of the pipeline phase to this file (FILE.<case> when several cases run)")
	f.FlagSet.StringVar(&o.memProf, "memprofile", "", "write an allocation profile to this file at the end (FILE.<case> from each child process), and the heap at the largest live-heap probe to FILE.<case>.probe")
	f.FlagSet.StringVar(&o.partitions, "partitions", "", "partition counts of the partition sweep at 1x (default 1,2,6,12; quick: 1,6)")
	f.FlagSet.StringVar(&o.sizes, "sizes", "", "sizes of the open-window sweep, multiples of 6,994 (default 1,10,100; quick: 1,10)")
	f.FlagSet.IntVar(&o.basePartitions, "size-partitions", 6, "partitions of the size sweep")
	f.FlagSet.Float64Var(&o.scale1x, "scale-1x", 0.5, "feed scale that opens about 6,994 (window, key) aggregates at once over 6 partitions")
	f.FlagSet.DurationVar(&o.duration, "duration", 0, "simulated span of the partition sweep's feed (default 30m)")
	f.FlagSet.DurationVar(&o.sizeSpan, "size-duration", 0, "simulated span of the larger sizes' feeds (default: 10m at 10x, 7m30s at 100x; quick: 7m30s)")
	f.FlagSet.DurationVar(&o.flush, "flush-interval", bench.DefaultFlushInterval, "the processor's tick (state flush, window writes, commits)")
	f.FlagSet.IntVar(&o.seed, "seed", 1, "feed seed")
	f.FlagSet.BoolVar(&o.inProcess, "in-process", false, "consume in this process instead of a child process (RSS and GC then include the broker's copy of the feed)")
	f.FlagSet.StringVar(&o.child, "child", "", "internal: run the consuming phases of one case (a JSON spec) and print its result as JSON")
	f.FlagSet.StringVar(&o.bufferLimit, "buffer-limit", "0", "the pipeline's memory bound (bytes, or with KiB, MiB, GiB); the consuming process runs with ov run's garbage collector settings for it; 0: the runtime's default")
	f.FlagSet.StringVar(&o.procs, "procs", "", "run each case once per GOMAXPROCS in this list (e.g. 1,2), one after the other, named CASE-gmpN; default: the process's")
	f.FlagSet.IntVar(&o.repeat, "repeat", 1, "run the whole plan this many times, pass after pass (pass k's runs are named CASE#k), and print each case's median over the passes")
	f.FlagSet.StringVar(&o.only, "cases", "", "run only these cases (comma separated names, e.g. p6-1x,p6-100x)")
	if err := f.parse(args); err != nil {
		return err
	}
	if o.child != "" {
		return benchChildMain(ctx, o, stdout, stderr)
	}
	cases, err := benchPlan(o)
	if err == nil {
		cases, err = withProcs(cases, o.procs)
	}
	if err == nil {
		var limit int64
		if limit, err = parseBytes(o.bufferLimit); err != nil {
			err = fmt.Errorf("--buffer-limit: %w", err)
		}
		for i := range cases {
			cases[i].BufferLimit = limit
		}
	}
	if err == nil && o.repeat < 1 {
		err = fmt.Errorf("--repeat: expected a count of passes >= 1, found %d", o.repeat)
	}
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
	cfg := bench.Config{DSN: o.dsn, FlushInterval: o.flush, Progress: stdout, Logger: benchLogger(stderr)}
	fmt.Fprintf(stdout, "ov bench (%s): %d cases on %d CPUs, flush every %s\n", mode, len(cases), runtime.NumCPU(), o.flush)
	began := time.Now()
	cfg.AroundPipeline = profilers(o.cpuProfile, o.trace, len(cases) > 1, stderr)

	if !o.inProcess {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("finding the ov binary for the child process: %w (--in-process avoids it)", err)
		}
		cfg.Exec = func(ctx context.Context, spec bench.Spec) (bench.Result, error) {
			return benchChild(ctx, exe, spec, o, len(cases) > 1, stderr)
		}
	}
	for pass := 1; pass <= o.repeat; pass++ {
		for _, rc := range cases {
			if pass > 1 {
				rc.Name = fmt.Sprintf("%s#%d", rc.Name, pass)
			}
			res, err := bench.Run(ctx, cfg, rc)
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
	if o.repeat > 1 {
		fmt.Fprintln(stdout)
		if err := rep.WriteMedians(stdout); err != nil {
			return err
		}
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
	if o.memProf != "" && o.inProcess {
		return writeProfile(o.memProf, "allocs")
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
		// Shorter feeds leave the pipeline a second or two: too few ticks to read anything.
		o.duration = 30 * time.Minute
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

// profilers returns a Config.AroundPipeline that writes a CPU profile and an execution trace
// of each pipeline phase into their files (file.<case> when perCase), or nil when both are "".
func profilers(cpuFile, traceFile string, perCase bool, stderr io.Writer) func(bench.Case) func() {
	if cpuFile == "" && traceFile == "" {
		return nil
	}
	return func(c bench.Case) func() {
		name := func(file string) string {
			if perCase {
				return file + "." + c.Name
			}
			return file
		}
		var stops []func()
		if cpuFile != "" {
			stops = append(stops, profile(name(cpuFile), pprof.StartCPUProfile, pprof.StopCPUProfile, stderr))
		}
		if traceFile != "" {
			stops = append(stops, profile(name(traceFile), trace.Start, trace.Stop, stderr))
		}
		return func() {
			for _, stop := range stops {
				stop()
			}
		}
	}
}

// profile starts a profile into file and returns what stops it.
func profile(file string, start func(io.Writer) error, stop func(), stderr io.Writer) func() {
	pf, err := os.Create(file)
	if err != nil {
		fmt.Fprintf(stderr, "profile: %v\n", err)
		return func() {}
	}
	if err := start(pf); err != nil {
		fmt.Fprintf(stderr, "profile %s: %v\n", file, err)
		pf.Close()
		return func() {}
	}
	return func() {
		stop()
		pf.Close()
	}
}

func benchLogger(stderr io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// benchChild runs the consuming phases of spec in a child process (ov bench --child), so that
// the processor's RSS and garbage collector are its own, not shared with the broker's copy of
// the feed.
func benchChild(ctx context.Context, exe string, spec bench.Spec, o benchOptions, perCase bool, stderr io.Writer) (bench.Result, error) {
	js, err := json.Marshal(spec)
	if err != nil {
		return bench.Result{}, err
	}
	args := []string{"bench", "--child", string(js)}
	if o.cpuProfile != "" {
		name := o.cpuProfile
		if perCase {
			name += "." + spec.Case.Name
		}
		args = append(args, "--cpuprofile", name)
	}
	if o.trace != "" {
		name := o.trace
		if perCase {
			name += "." + spec.Case.Name
		}
		args = append(args, "--trace", name)
	}
	if o.memProf != "" {
		args = append(args, "--memprofile", o.memProf+"."+spec.Case.Name)
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Stderr = stderr
	cmd.WaitDelay = 30 * time.Second
	out, err := cmd.Output()
	if err != nil {
		return bench.Result{}, fmt.Errorf("child process: %w", err)
	}
	var res bench.Result
	if err := json.Unmarshal(out, &res); err != nil {
		return bench.Result{}, fmt.Errorf("child process result: %w", err)
	}
	return res, nil
}

// benchChildMain is ov bench --child: it consumes one case's feed and prints the result.
func benchChildMain(ctx context.Context, o benchOptions, stdout, stderr io.Writer) error {
	var spec bench.Spec
	if err := json.Unmarshal([]byte(o.child), &spec); err != nil {
		return fmt.Errorf("--child: %w", err)
	}
	setGC(spec.Case.BufferLimit) // as ov run does, for the raw consumer and the pipeline alike
	if o.memProf != "" {
		runtime.MemProfileRate = 64 << 10
	}
	cfg := bench.Config{Logger: benchLogger(stderr)}
	if o.memProf != "" {
		// The heap at the largest probe: what the live heap held when bytes per open key
		// was measured (the probe has just collected, so inuse is exact up to sampling).
		cfg.AtProbe = func(int) {
			if err := writeProfile(o.memProf+".probe", "heap"); err != nil {
				fmt.Fprintln(stderr, "heap profile at probe:", err)
			}
		}
	}
	cfg.AroundPipeline = profilers(o.cpuProfile, o.trace, false, stderr)
	var res bench.Result
	if err := bench.Consume(ctx, cfg, spec, &res); err != nil {
		return err
	}
	if o.memProf != "" {
		if err := writeProfile(o.memProf, "allocs"); err != nil {
			return err
		}
	}
	return json.NewEncoder(stdout).Encode(res)
}

func writeProfile(file, name string) error {
	mf, err := os.Create(file)
	if err != nil {
		return err
	}
	if err := pprof.Lookup(name).WriteTo(mf, 0); err != nil {
		mf.Close()
		return err
	}
	return mf.Close()
}

// withProcs returns each case once per GOMAXPROCS in list (comma separated), one after the
// other, or the cases as they are when list is empty.
func withProcs(cases []bench.Case, list string) ([]bench.Case, error) {
	if list == "" {
		return cases, nil
	}
	procs, err := parseList(list)
	if err != nil {
		return nil, fmt.Errorf("--procs: %w", err)
	}
	var out []bench.Case
	for _, c := range cases {
		for _, n := range procs {
			rc := c
			rc.Procs = int(n)
			rc.Name = fmt.Sprintf("%s-gmp%d", c.Name, rc.Procs)
			out = append(out, rc)
		}
	}
	return out, nil
}
