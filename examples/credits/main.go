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

const usage = `credits: exactly-once credits at the sink transaction boundary (streamledger example)

Usage:
  credits worked-example [flags]   the seed's worked example, step by step
  credits run [flags]              the consumer (without -brokers: a demonstration feed on an
                                   in-process broker)
  credits bench [flags]            1 M credits through the consumer at several batch sizes,
                                   checked against an independent count

The database is read from -database or DATABASE_URL (default %s): a Postgres URL,
or mysql://user:password@host:port/database for MySQL or MariaDB.
Run "credits <command> -h" for a command's flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "credits:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintf(stderr, usage, defaultDatabaseURL)
		return errUsage
	}
	switch args[0] {
	case "worked-example":
		return workedExampleCommand(ctx, args[1:], stdout, stderr)
	case "run":
		return runCommand(ctx, args[1:], stdout, stderr)
	case "bench":
		return benchCommand(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprintf(stdout, usage, defaultDatabaseURL)
		return nil
	}
	fmt.Fprintf(stderr, usage, defaultDatabaseURL)
	return fmt.Errorf("%w: unknown command %q", errUsage, args[0])
}

// errUsage is a command line the program cannot run; the usage was printed.
var errUsage = errors.New("usage")
