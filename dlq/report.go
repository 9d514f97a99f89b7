package dlq

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/streamledger/streamledger/internal/truncate"
)

// Report is what a replay (or a dry run of one) read and decided, grouped by error class. The
// zero Report is empty and ready for [Report.Add].
type Report struct {
	// DryRun is set when nothing was republished or committed: counts of Replayed letters are
	// those a real run would have replayed.
	DryRun bool
	// Replayed, Skipped and Refused count letters by [Decision]. In a real run a letter counts
	// as replayed only once its delivery was confirmed.
	Replayed, Skipped, Refused int
	// Invalid counts messages of the dead-letter topic that [Decode] rejected; a replay cannot
	// tell where they came from and leaves them out. InvalidExample is the first one's error.
	Invalid        int
	InvalidExample string
	// Classes holds one entry per error class, sorted by Class.
	Classes []ClassSummary
}

// ClassSummary counts the dead letters of one error class.
type ClassSummary struct {
	Class                      string
	Count                      int // letters of this class that were decided (any decision but Stop)
	Replayed, Skipped, Refused int
	FirstFailed, LastFailed    time.Time // range of FailedAt; zero when no letter had one
	Example                    string    // the ErrorMessage of the earliest failure (ties: the smallest)
}

// Add counts d with its decision. A [Stop] decision is not counted: the letter was not decided.
func (r *Report) Add(d DeadLetter, dec Decision) {
	if dec == Stop {
		return
	}
	i, found := slices.BinarySearchFunc(r.Classes, d.ErrorClass, func(c ClassSummary, class string) int {
		return strings.Compare(c.Class, class)
	})
	if !found {
		r.Classes = slices.Insert(r.Classes, i, ClassSummary{Class: d.ErrorClass, Example: d.ErrorMessage})
	}
	c := &r.Classes[i]
	// The example is the earliest failure (then the smallest message), so that a report does not
	// depend on the order its letters were added: a replay adds a letter when its delivery is
	// confirmed, a dry run when it is decided.
	if found {
		earlier := !d.FailedAt.IsZero() && (c.FirstFailed.IsZero() || d.FailedAt.Before(c.FirstFailed))
		tie := d.FailedAt.Equal(c.FirstFailed) && d.ErrorMessage < c.Example
		if earlier || tie {
			c.Example = d.ErrorMessage
		}
	}
	c.Count++
	switch dec {
	case Replay:
		r.Replayed++
		c.Replayed++
	case Skip:
		r.Skipped++
		c.Skipped++
	case Refuse:
		r.Refused++
		c.Refused++
	}
	if !d.FailedAt.IsZero() {
		if c.FirstFailed.IsZero() || d.FailedAt.Before(c.FirstFailed) {
			c.FirstFailed = d.FailedAt
		}
		if d.FailedAt.After(c.LastFailed) {
			c.LastFailed = d.FailedAt
		}
	}
}

// AddInvalid counts a message that could not be decoded.
func (r *Report) AddInvalid(err error) {
	if r.Invalid == 0 && err != nil {
		r.InvalidExample = err.Error()
	}
	r.Invalid++
}

// Total is the number of messages counted: decided letters plus invalid ones.
func (r *Report) Total() int { return r.Replayed + r.Skipped + r.Refused + r.Invalid }

// maxExample bounds the example message in the text report.
const maxExample = 60

// WriteTo writes the report as text: a summary line, then a table with one row per class, most
// frequent first (ties by class name).
func (r *Report) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	verb := "replayed"
	if r.DryRun {
		verb = "would replay"
	}
	fmt.Fprintf(cw, "%d dead letters: %s %d, skipped %d, refused %d, invalid %d\n",
		r.Total(), verb, r.Replayed, r.Skipped, r.Refused, r.Invalid)
	if len(r.Classes) > 0 {
		rows := slices.Clone(r.Classes)
		slices.SortStableFunc(rows, func(a, b ClassSummary) int { return b.Count - a.Count })
		tw := tabwriter.NewWriter(cw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "CLASS\tCOUNT\tREPLAY\tSKIP\tREFUSE\tFIRST FAILED\tLAST FAILED\tEXAMPLE")
		for _, c := range rows {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%q\n", orDash(c.Class), c.Count, c.Replayed, c.Skipped, c.Refused,
				formatTime(c.FirstFailed), formatTime(c.LastFailed), truncate.Message(c.Example, maxExample))
		}
		tw.Flush()
	}
	if r.Invalid > 0 {
		fmt.Fprintf(cw, "first invalid: %s\n", r.InvalidExample)
	}
	return cw.n, cw.err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}
