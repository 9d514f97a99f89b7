package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/streamledger/streamledger/internal/ovharness/chaos"
)

func runChaos(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newFlags("chaos", "The reliability harness: a broker process, the simulated feed, processors as OS processes and\n"+
		"Postgres; kills, rebalances, Postgres outages, an idle partition and fault points inside the\n"+
		"process; after each scenario it drains and compares every table and dead letter with the oracle.\n"+
		"Prints a table; fails on any mismatch. --full is `make chaos` (over a million records, and it\n"+
		"stops and starts the Postgres server: not on a shared server).", stderr)
	full := f.Bool("full", "", false, "the full size (over 1 M records; stops and starts the Postgres server)")
	scenarios := f.String("scenarios", "", "", "comma-separated scenarios (default all): "+strings.Join(chaos.Scenarios(), ", "))
	dsn := f.String("dsn", "DATABASE_URL", DefaultDatabaseURL, "Postgres connection string")
	workDir := f.String("workdir", "", "", "directory for the processes' logs (default: a temporary one, removed on success)")
	seed := f.Int("seed", "", 1, "seed of the random fault instants")
	cluster := f.String("postgres-cluster", "", "", "the Postgres cluster the full run stops and starts, VERSION/NAME as pg_ctlcluster takes it\n"+
		"(default: the main cluster of the only version in /etc/postgresql); --dsn must point at it")
	brokerFlags := f.String("broker-flags", "", "", "flags added to every \"ov broker\" (space-separated), e.g. --no-expiry")
	err := f.parse(args)
	if err != nil {
		return err
	}
	var pgCluster func(context.Context, string) error
	if *full || *cluster != "" {
		if pgCluster, err = chaos.Cluster(*cluster); err != nil {
			return err
		}
	}
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	size := chaos.Short()
	if *full {
		size = chaos.Full()
	}
	dir := *workDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "ov-chaos-"); err != nil {
			return err
		}
	}
	var names []string
	if *scenarios != "" {
		names = strings.Split(*scenarios, ",")
	}
	results, err := chaos.Run(ctx, chaos.Config{Binary: bin, DSN: *dsn, Size: size, Scenarios: names, WorkDir: dir,
		Progress: stderr, Seed: uint64(*seed), BrokerFlags: strings.Fields(*brokerFlags), PostgresCluster: pgCluster})
	chaos.WriteTable(stdout, size.Name, results)
	if err != nil {
		return err
	}
	for _, r := range results {
		if !r.OK() {
			fmt.Fprintf(stderr, "logs in %s\n", dir)
			return errors.New("chaos: a scenario failed or mismatched the oracle")
		}
	}
	if *workDir == "" {
		os.RemoveAll(dir)
	}
	return nil
}
