package dlq_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/dlq"
)

func TestReportGroupsByClass(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)
	var r dlq.Report
	r.Add(dlq.DeadLetter{ErrorClass: "schema", ErrorMessage: "first", FailedAt: t0.Add(time.Minute)}, dlq.Replay)
	r.Add(dlq.DeadLetter{ErrorClass: "range", ErrorMessage: "r", FailedAt: t0}, dlq.Skip)
	r.Add(dlq.DeadLetter{ErrorClass: "schema", ErrorMessage: "second", FailedAt: t0}, dlq.Refuse)
	r.Add(dlq.DeadLetter{ErrorClass: "schema", ErrorMessage: "third"}, dlq.Replay)
	r.Add(dlq.DeadLetter{ErrorClass: "schema"}, dlq.Stop) // not decided: not counted
	r.AddInvalid(errors.New("dlq: header x is missing"))
	r.AddInvalid(errors.New("another"))

	require.Equal(t, dlq.Report{
		Replayed: 2, Skipped: 1, Refused: 1, Invalid: 2, InvalidExample: "dlq: header x is missing",
		Classes: []dlq.ClassSummary{
			{Class: "range", Count: 1, Skipped: 1, FirstFailed: t0, LastFailed: t0, Example: "r"},
			{Class: "schema", Count: 3, Replayed: 2, Refused: 1, FirstFailed: t0, LastFailed: t0.Add(time.Minute), Example: "second"},
		},
	}, r)
	require.Equal(t, 6, r.Total())
}

// TestReportOrderIndependent: the same letters added in any order give the same report.
func TestReportOrderIndependent(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)
	letters := []dlq.DeadLetter{
		{ErrorClass: "a", ErrorMessage: "late", FailedAt: t0.Add(time.Hour)},
		{ErrorClass: "a", ErrorMessage: "b-tie", FailedAt: t0},
		{ErrorClass: "a", ErrorMessage: "a-tie", FailedAt: t0},
		{ErrorClass: "a", ErrorMessage: "no time"},
		{ErrorClass: "b", ErrorMessage: "z"},
		{ErrorClass: "b", ErrorMessage: "y"},
	}
	decisions := []dlq.Decision{dlq.Replay, dlq.Skip, dlq.Refuse, dlq.Replay, dlq.Replay, dlq.Skip}
	var want dlq.Report
	for i, d := range letters {
		want.Add(d, decisions[i])
	}
	require.Equal(t, "a-tie", want.Classes[0].Example)
	require.Equal(t, "y", want.Classes[1].Example)
	for _, order := range [][]int{{5, 4, 3, 2, 1, 0}, {3, 0, 4, 2, 5, 1}, {2, 1, 0, 5, 3, 4}} {
		var got dlq.Report
		for _, i := range order {
			got.Add(letters[i], decisions[i])
		}
		require.Equal(t, want, got, "order %v", order)
	}
}

func TestReportWriteTo(t *testing.T) {
	var r dlq.Report
	r.DryRun = true
	var sb strings.Builder
	n, err := r.WriteTo(&sb)
	require.NoError(t, err)
	require.Equal(t, int64(sb.Len()), n)
	require.Equal(t, "0 dead letters: would replay 0, skipped 0, refused 0, invalid 0\n", sb.String())

	r.DryRun = false
	r.Add(dlq.DeadLetter{ErrorClass: "", ErrorMessage: strings.Repeat("x", 100)}, dlq.Replay)
	r.AddInvalid(errors.New("bad"))
	sb.Reset()
	_, err = r.WriteTo(&sb)
	require.NoError(t, err)
	require.Equal(t, "2 dead letters: replayed 1, skipped 0, refused 0, invalid 1\n"+
		"CLASS  COUNT  REPLAY  SKIP  REFUSE  FIRST FAILED  LAST FAILED  EXAMPLE\n"+
		"-      1      1       0     0       -             -            \""+strings.Repeat("x", 57)+"...\"\n"+
		"first invalid: bad\n", sb.String())
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestReportWriteToError(t *testing.T) {
	var r dlq.Report
	r.Add(dlq.DeadLetter{ErrorClass: "a"}, dlq.Replay)
	_, err := r.WriteTo(failingWriter{})
	require.EqualError(t, err, "disk full")
}

func BenchmarkReportAdd(b *testing.B) {
	t0 := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)
	classes := []string{"schema", "range", "*strconv.NumError", "validation", "timeout"}
	letters := make([]dlq.DeadLetter, 1024)
	for i := range letters {
		letters[i] = dlq.DeadLetter{ErrorClass: classes[i%len(classes)], ErrorMessage: "m", FailedAt: t0.Add(time.Duration(i) * time.Second)}
	}
	var r dlq.Report
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		r.Add(letters[i%len(letters)], dlq.Replay)
		i++
	}
}
