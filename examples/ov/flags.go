package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/streamledger/streamledger/examples/ov/event"
)

// flags is a flag.FlagSet whose flags may take their default from an environment variable.
// A flag given on the command line wins over the variable, the variable over the built-in
// default; a variable that does not parse is an error, never ignored.
type flags struct {
	*flag.FlagSet
	envErrs []error
}

func newFlags(name, synopsis string, stderr io.Writer) *flags {
	fs := flag.NewFlagSet("ov "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: ov %s [flags]\n\n%s\n\nflags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	return &flags{FlagSet: fs}
}

func envUsage(usage, env string) string {
	if env == "" {
		return usage
	}
	return usage + " ($" + env + ")"
}

func (f *flags) String(name, env, def, usage string) *string {
	if v, ok := os.LookupEnv(env); ok && env != "" {
		def = v
	}
	return f.FlagSet.String(name, def, envUsage(usage, env))
}

func (f *flags) Duration(name, env string, def time.Duration, usage string) *time.Duration {
	if v, ok := os.LookupEnv(env); ok && env != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			f.envErrs = append(f.envErrs, fmt.Errorf("$%s: %w", env, err))
		} else {
			def = d
		}
	}
	return f.FlagSet.Duration(name, def, envUsage(usage, env))
}

func (f *flags) Int(name, env string, def int, usage string) *int {
	if v, ok := os.LookupEnv(env); ok && env != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			f.envErrs = append(f.envErrs, fmt.Errorf("$%s: %w", env, err))
		} else {
			def = n
		}
	}
	return f.FlagSet.Int(name, def, envUsage(usage, env))
}

func (f *flags) Float(name, env string, def float64, usage string) *float64 {
	if v, ok := os.LookupEnv(env); ok && env != "" {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			f.envErrs = append(f.envErrs, fmt.Errorf("$%s: %w", env, err))
		} else {
			def = n
		}
	}
	return f.FlagSet.Float64(name, def, envUsage(usage, env))
}

func (f *flags) Bool(name, env string, def bool, usage string) *bool {
	if v, ok := os.LookupEnv(env); ok && env != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			f.envErrs = append(f.envErrs, fmt.Errorf("$%s: %w", env, err))
		} else {
			def = b
		}
	}
	return f.FlagSet.Bool(name, def, envUsage(usage, env))
}

// parse parses args; errors are printed with the usage and returned as errUsage (or
// flag.ErrHelp for -h).
func (f *flags) parse(args []string) error {
	if err := f.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if len(f.envErrs) > 0 {
		fmt.Fprintln(f.Output(), errors.Join(f.envErrs...))
		return errUsage
	}
	if f.NArg() > 0 {
		fmt.Fprintf(f.Output(), "unexpected arguments: %q\n", f.Args())
		return errUsage
	}
	return nil
}

// parseBox reads "minLat,maxLat,minLon,maxLon".
func parseBox(s string) (event.Box, error) {
	parts := strings.Split(s, ",")
	if len(parts) != 4 {
		return event.Box{}, fmt.Errorf("bounding box %q: want minLat,maxLat,minLon,maxLon", s)
	}
	var v [4]float64
	for i, p := range parts {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil {
			return event.Box{}, fmt.Errorf("bounding box %q: %w", s, err)
		}
		v[i] = f
	}
	return event.Box{MinLat: v[0], MaxLat: v[1], MinLon: v[2], MaxLon: v[3]}, nil
}

func formatBox(b event.Box) string {
	return fmt.Sprintf("%g,%g,%g,%g", b.MinLat, b.MaxLat, b.MinLon, b.MaxLon)
}

// parseStart reads a simulated start: RFC 3339, or HH:MM on the default day in CET.
func parseStart(s string, day time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	hm, err := time.Parse("15:04", s)
	if err != nil {
		return time.Time{}, fmt.Errorf("start %q: want RFC 3339 or HH:MM", s)
	}
	return time.Date(day.Year(), day.Month(), day.Day(), hm.Hour(), hm.Minute(), 0, 0, day.Location()), nil
}

// parseBytes reads a byte count: a whole number, or one with a KiB, MiB or GiB suffix.
func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("expected a byte count such as 268435456 or 256MiB, found %q", s)
	}
	return n * mult, nil
}
