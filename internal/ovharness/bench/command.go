package bench

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
)

// Options are the choices of "ov bench": which cases run, how often, and what is written
// beside the tables.
type Options struct {
	// DSN is the Postgres connection string.
	DSN string
	// Quick selects the short plan: 1 and 6 partitions at 1x, and 10x.
	Quick bool
	// JSONOut, if set, receives the results as JSON.
	JSONOut string
	// CPUProfile, Trace and MemProfile, if set, name the files of a CPU profile and an
	// execution trace of each pipeline phase, and of an allocation profile at the end
	// (FILE.<case> when several cases run).
	CPUProfile, Trace, MemProfile string
	// Timeline, if set, names the file that receives a JSON line per tick and per write of
	// each pipeline phase (FILE.<case> when several cases run): when each wait and each write
	// happened, and what the collector did meanwhile.
	Timeline string
	// Partitions and Sizes are the comma-separated partition counts of the sweep at 1x and the
	// sizes of the open-window sweep; empty: the plan's (1,2,6,12 and 1,10,100; quick: 1,6
	// and 1,10).
	Partitions, Sizes string
	// SizePartitions is the partition count of the size sweep.
	SizePartitions int
	// Scale1x is the feed scale that opens about SeedOpenWindows aggregates at once.
	Scale1x float64
	// Duration is the simulated span of the partition sweep's feed; zero: 30 minutes.
	Duration time.Duration
	// SizeDuration is the simulated span of the larger sizes' feeds; zero: 10 minutes at 10x,
	// 7m30s above (and in the quick plan).
	SizeDuration time.Duration
	// FlushInterval is the processor's tick.
	FlushInterval time.Duration
	// Seed is the feed's seed.
	Seed int
	// Procs, if set, runs each case once per GOMAXPROCS in this comma-separated list.
	Procs string
	// BufferLimit is the pipeline's memory bound; zero: the runtime's default.
	BufferLimit int64
	// Cases, if set, keeps only the cases of these comma-separated names.
	Cases string
	// Repeat is how many times the whole plan runs, pass after pass.
	Repeat int
	// InProcess consumes in this process instead of a child process.
	InProcess bool
}

// Plan lists the cases o selects, in the order they run: the partition sweep at 1x, then the
// size sweep, each once per GOMAXPROCS of o.Procs. Its errors name the option at fault.
func Plan(o Options) ([]Case, error) {
	cases, err := sweeps(o)
	if err != nil {
		return nil, err
	}
	if cases, err = withProcs(cases, o.Procs); err != nil {
		return nil, err
	}
	for i := range cases {
		cases[i].BufferLimit = o.BufferLimit
	}
	if o.Repeat < 1 {
		return nil, fmt.Errorf("--repeat: expected a count of passes >= 1, found %d", o.Repeat)
	}
	return cases, nil
}

// sweeps lists the cases: the partition sweep at 1x, then the size sweep.
func sweeps(o Options) ([]Case, error) {
	parts, sizes := "1,2,6,12", "1,10,100"
	if o.Quick {
		parts, sizes = "1,6", "1,10"
	}
	if o.Duration == 0 {
		// Shorter feeds leave the pipeline a second or two: too few ticks to read anything.
		o.Duration = 30 * time.Minute
	}
	if o.Partitions != "" {
		parts = o.Partitions
	}
	if o.Sizes != "" {
		sizes = o.Sizes
	}
	ps, err := parseList(parts)
	if err != nil {
		return nil, fmt.Errorf("--partitions: %w", err)
	}
	ss, err := parseList(sizes)
	if err != nil {
		return nil, fmt.Errorf("--sizes: %w", err)
	}
	sel := newSelection(o.Cases)
	for _, p := range ps {
		sel.add(Case{Name: fmt.Sprintf("p%d-1x", int(p)), Size: 1, Scale: o.Scale1x, Partitions: int(p),
			Duration: o.Duration, Seed: uint64(o.Seed)})
	}
	for _, s := range ss {
		sel.add(Case{Name: fmt.Sprintf("p%d-%gx", o.SizePartitions, s), Size: s, Scale: scaleFor(o.Scale1x, s),
			Partitions: o.SizePartitions, Duration: sizeSpan(o, s), Seed: uint64(o.Seed)})
	}
	if len(sel.cases) == 0 {
		return nil, fmt.Errorf("no case selected by --cases %q", o.Cases)
	}
	return sel.cases, nil
}

// sizeSpan is the simulated span of the feed of the size sweep's case of the given size.
func sizeSpan(o Options, size float64) time.Duration {
	switch {
	case o.SizeDuration != 0:
		return o.SizeDuration
	case size <= 1:
		return o.Duration
	case size <= 10 && !o.Quick:
		return 10 * time.Minute
	default:
		return 7*time.Minute + 30*time.Second
	}
}

// selection collects the cases a --cases list names (every case when it is empty), each name
// once.
type selection struct {
	want  map[string]bool
	seen  map[string]bool
	cases []Case
}

func newSelection(names string) *selection {
	s := &selection{want: map[string]bool{}, seen: map[string]bool{}}
	for _, n := range strings.Split(names, ",") {
		if n = strings.TrimSpace(n); n != "" {
			s.want[n] = true
		}
	}
	return s
}

func (s *selection) add(c Case) {
	if s.seen[c.Name] || (len(s.want) > 0 && !s.want[c.Name]) {
		return
	}
	s.seen[c.Name] = true
	s.cases = append(s.cases, c)
}

// scaleFor is the feed scale that opens about size times the 1x open windows. Open keys grow a
// little faster than the scale (a larger network has more stops per vehicle), about as
// scale^1.15.
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

// withProcs returns each case once per GOMAXPROCS in list (comma separated), one after the
// other, or the cases as they are when list is empty.
func withProcs(cases []Case, list string) ([]Case, error) {
	if list == "" {
		return cases, nil
	}
	procs, err := parseList(list)
	if err != nil {
		return nil, fmt.Errorf("--procs: %w", err)
	}
	var out []Case
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

// RunPlan runs the cases o.Repeat times, pass after pass, prints a line per phase and then the
// tables to stdout (and each case's median when there are several passes), and writes the
// files o names. Unless o.InProcess, each case's consuming phases run in a child process of
// exe ("exe bench --child SPEC", which calls [Child]).
func RunPlan(ctx context.Context, o Options, cases []Case, exe string, stdout, stderr io.Writer) error {
	if o.MemProfile != "" {
		runtime.MemProfileRate = 64 << 10
	}
	mode := "full"
	if o.Quick {
		mode = "quick"
	}
	rep := NewReport(mode)
	cfg := Config{DSN: o.DSN, FlushInterval: o.FlushInterval, Progress: stdout, Logger: logger(stderr)}
	fmt.Fprintf(stdout, "ov bench (%s): %d cases on %d CPUs, flush every %s\n", mode, len(cases), runtime.NumCPU(), o.FlushInterval)
	began := time.Now()
	cfg.AroundPipeline = profilers(o.CPUProfile, o.Trace, len(cases) > 1, stderr)
	cfg.Timeline = timelineFiles(o.Timeline, len(cases) > 1)
	if !o.InProcess {
		cfg.Exec = func(ctx context.Context, spec Spec) (Result, error) {
			return runChild(ctx, exe, spec, o, len(cases) > 1, stderr)
		}
	}
	for pass := 1; pass <= o.Repeat; pass++ {
		for _, rc := range cases {
			if pass > 1 {
				rc.Name = fmt.Sprintf("%s#%d", rc.Name, pass)
			}
			res, err := Run(ctx, cfg, rc)
			if err != nil {
				return fmt.Errorf("case %s: %w", rc.Name, err)
			}
			rep.Cases = append(rep.Cases, res)
		}
	}
	fmt.Fprintf(stdout, "\ndone in %s\n\n", time.Since(began).Round(time.Second))
	if err := writeReport(rep, o, stdout); err != nil {
		return err
	}
	if o.MemProfile != "" && o.InProcess {
		return writeProfile(o.MemProfile, "allocs")
	}
	return nil
}

// writeReport prints the tables (and the medians of several passes) and writes the JSON file
// o names.
func writeReport(rep Report, o Options, stdout io.Writer) error {
	if err := rep.WriteTables(stdout); err != nil {
		return err
	}
	if o.Repeat > 1 {
		fmt.Fprintln(stdout)
		if err := rep.WriteMedians(stdout); err != nil {
			return err
		}
	}
	if o.JSONOut == "" {
		return nil
	}
	jf, err := os.Create(o.JSONOut)
	if err != nil {
		return err
	}
	if err := rep.WriteJSON(jf); err != nil {
		jf.Close()
		return err
	}
	return jf.Close()
}

// profilers returns a Config.AroundPipeline that writes a CPU profile and an execution trace
// of each pipeline phase into their files (file.<case> when perCase), or nil when both are "".
func profilers(cpuFile, traceFile string, perCase bool, stderr io.Writer) func(Case) func() {
	if cpuFile == "" && traceFile == "" {
		return nil
	}
	return func(c Case) func() {
		var stops []func()
		if cpuFile != "" {
			stops = append(stops, profile(caseFile(cpuFile, c.Name, perCase), pprof.StartCPUProfile, pprof.StopCPUProfile, stderr))
		}
		if traceFile != "" {
			stops = append(stops, profile(caseFile(traceFile, c.Name, perCase), trace.Start, trace.Stop, stderr))
		}
		return func() {
			for _, stop := range stops {
				stop()
			}
		}
	}
}

// timelineFiles returns a Config.Timeline that creates the timeline's file (file.<case> when
// perCase), or nil when file is "".
func timelineFiles(file string, perCase bool) func(Case) (io.WriteCloser, error) {
	if file == "" {
		return nil
	}
	return func(c Case) (io.WriteCloser, error) { return os.Create(caseFile(file, c.Name, perCase)) }
}

// caseFile is file, or file.<name> when every case writes its own.
func caseFile(file, name string, perCase bool) string {
	if perCase {
		return file + "." + name
	}
	return file
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

func logger(stderr io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// runChild runs the consuming phases of spec in a child process (exe bench --child), so that
// the processor's RSS and garbage collector are its own, not shared with the broker's copy of
// the feed.
func runChild(ctx context.Context, exe string, spec Spec, o Options, perCase bool, stderr io.Writer) (Result, error) {
	js, err := json.Marshal(spec)
	if err != nil {
		return Result{}, err
	}
	args := []string{"bench", "--child", string(js)}
	if o.CPUProfile != "" {
		args = append(args, "--cpuprofile", caseFile(o.CPUProfile, spec.Case.Name, perCase))
	}
	if o.Trace != "" {
		args = append(args, "--trace", caseFile(o.Trace, spec.Case.Name, perCase))
	}
	if o.MemProfile != "" {
		args = append(args, "--memprofile", o.MemProfile+"."+spec.Case.Name)
	}
	if o.Timeline != "" {
		args = append(args, "--timeline", caseFile(o.Timeline, spec.Case.Name, perCase))
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Stderr = stderr
	cmd.WaitDelay = 30 * time.Second
	out, err := cmd.Output()
	if err != nil {
		return Result{}, fmt.Errorf("child process: %w", err)
	}
	var res Result
	if err := json.Unmarshal(out, &res); err != nil {
		return Result{}, fmt.Errorf("child process result: %w", err)
	}
	return res, nil
}

// ParseSpec reads the JSON spec a child process is given.
func ParseSpec(js string) (Spec, error) {
	var spec Spec
	err := json.Unmarshal([]byte(js), &spec)
	return spec, err
}

// Child is the child process of [RunPlan]: it consumes one case's feed, as spec describes it,
// and prints the result as JSON to stdout. The caller sets the garbage collector first, as the
// processor's command does.
func Child(ctx context.Context, o Options, spec Spec, stdout, stderr io.Writer) error {
	if o.MemProfile != "" {
		runtime.MemProfileRate = 64 << 10
	}
	cfg := Config{Logger: logger(stderr)}
	if o.MemProfile != "" {
		// The heap at the largest probe: what the live heap held when bytes per open key
		// was measured (the probe has just collected, so inuse is exact up to sampling).
		cfg.AtProbe = func(int) {
			if err := writeProfile(o.MemProfile+".probe", "heap"); err != nil {
				fmt.Fprintln(stderr, "heap profile at probe:", err)
			}
		}
	}
	cfg.AroundPipeline = profilers(o.CPUProfile, o.Trace, false, stderr)
	cfg.Timeline = timelineFiles(o.Timeline, false)
	var res Result
	if err := Consume(ctx, cfg, spec, &res); err != nil {
		return err
	}
	if o.MemProfile != "" {
		if err := writeProfile(o.MemProfile, "allocs"); err != nil {
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
