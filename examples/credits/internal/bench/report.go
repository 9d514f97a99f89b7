package bench

import (
	"fmt"
	"io"
	"runtime"
	"text/tabwriter"
	"time"
)

// WriteTable writes the result as the README's tables.
func (r Result) WriteTable(w io.Writer) error {
	c, e := r.Config, r.Expected
	fmt.Fprintf(w, "%d credits over %d accounts, %d partitions: %d new, %d duplicates, %d conflicts, %d to unknown accounts\n",
		e.Messages, c.Feed.Accounts, c.Feed.Partitions, e.Applied, e.Duplicates, e.Conflicts, e.Unknown)
	fmt.Fprintf(w, "%d workers, commit every %v, GOMAXPROCS %d; produced at %.0f/s; raw consumer %.0f credits/s\n\n",
		c.Workers, c.CommitInterval, runtime.GOMAXPROCS(0), r.Produce.PerSec, r.Raw.PerSec)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tbatch\tcredits/s\tof raw\ts\ttransactions\tcredits/tx\tapplied\tduplicates\tdead letters\tverified\t")
	rows := append(append([]RunResult(nil), r.Runs...), r.Replay)
	for i, run := range rows {
		name := run.Name
		if i == r.Best {
			name += " (best)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.2f\t%.1f\t%d\t%.1f\t%d\t%d\t%d\t%v\t\n", name, run.Batch, run.Rate.PerSec, run.Ratio,
			run.Rate.Seconds, run.Transactions, float64(run.Rate.Records)/float64(max(run.Transactions, 1)),
			run.Counters.Applied, run.Counters.Duplicate, run.Counters.DeadLettered, run.Verified)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if p := r.Paced; p.Verified {
		l := p.Latency
		fmt.Fprintf(w, "\npaced: %d credits at %d/s, batch %d: produce to commit p50 %v, p99 %v, max %v (%d records, verified %v)\n",
			p.Rate.Records, r.PacedRate, p.Batch, ms(l.P50), ms(l.P99), ms(l.Max), l.Records, p.Verified)
	}
	return nil
}

func ms(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
