package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/pgtest"
)

// TestRun runs one small case end to end: every record is consumed raw and by the pipeline,
// the pipeline drains (its figures are filled from a commit through every partition's end),
// and the report round-trips through JSON.
func TestRun(t *testing.T) {
	pgtest.New(t) // skips (or fails in CI) without a server
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var timeline closeBuffer
	res, err := Run(ctx, Config{DSN: pgtest.URL(), FlushInterval: 200 * time.Millisecond,
		Timeline:       func(Case) (io.WriteCloser, error) { return &timeline, nil },
		AroundPipeline: func(Case) func() { checkpoint(ctx, t); return func() {} }},
		Case{Name: "tiny", Size: 1, Scale: 0.05, Partitions: 2, Duration: 10 * time.Minute})
	require.NoError(t, err)
	assert.True(t, timeline.closed, "the timeline is closed when the phase ends")
	ticks, kinds := 0, map[string]int{}
	var at float64
	for _, l := range readTimeline(t, &timeline.Buffer) {
		assert.GreaterOrEqual(t, l.At, at, "lines in time order")
		at = l.At
		if l.Event == "tick" {
			ticks++
		} else {
			kinds[l.Kind]++
		}
	}
	assert.Equal(t, res.Stages.Ticks, ticks, "a line per tick")
	assert.Positive(t, kinds["state"], "state flushes")
	assert.Positive(t, kinds["close"], "close writes")
	require.Positive(t, res.Records)
	assert.Equal(t, res.Records, res.Raw.Events)
	assert.Equal(t, res.Records, res.Pipeline.Events, "one consumer, no rebalance: each record decided once")
	assert.Equal(t, res.Pipeline.Events, res.Admitted+res.Late+res.DeadLettered)
	assert.Positive(t, res.Pipeline.EventsPerSec)
	assert.Positive(t, res.Ratio)
	assert.Positive(t, res.RowsState)
	assert.Positive(t, res.RowsPartials, "the last windows were closed by the idle advance and written")
	assert.Positive(t, res.Stages.DecodeNsPerEvent)
	assert.Positive(t, res.Stages.Ticks)
	assert.GreaterOrEqual(t, res.Stages.SinkWaitNsPerEvent, 0.0)
	assert.Positive(t, res.Stages.CPUNsPerEvent)
	assert.Positive(t, res.Procs)
	st := res.Storage
	assert.Positive(t, st.StoredRows, "complete windows were folded into merged rows")
	assert.GreaterOrEqual(t, st.RowWritesPerRow, 1.0, "every stored row was written at least once")
	assert.Positive(t, st.WALBytes)
	assert.GreaterOrEqual(t, st.Checkpoints, int64(1), "the checkpoint made as the phase started")
	assert.Positive(t, st.MergedBytes)
	assert.GreaterOrEqual(t, res.TickP99Ms, res.TickP50Ms)
	if runtime.GOOS == "linux" {
		assert.Positive(t, res.PeakOutsideGo, "the client's buffers and the binary, sampled while it ran")
		assert.Less(t, res.PeakOutsideGo, res.PeakRSS)
	}

	rep := NewReport("test")
	rep.Cases = append(rep.Cases, res)
	var tables, js bytes.Buffer
	require.NoError(t, rep.WriteTables(&tables))
	assert.Contains(t, tables.String(), "tiny")
	assert.Contains(t, tables.String(), "sink wait")
	assert.Contains(t, tables.String(), "drain")
	assert.Contains(t, tables.String(), "writes/row")
	assert.Contains(t, tables.String(), "checkpoints")
	assert.Contains(t, tables.String(), "outside Go MB")
	assert.Positive(t, res.Stages.DrainSeconds, "a bounded run ends with its last writes and commit")
	assert.Less(t, res.DrainShare(), 1.0)
	require.NoError(t, rep.WriteJSON(&js))
	var back Report
	require.NoError(t, json.Unmarshal(js.Bytes(), &back))
	require.Len(t, back.Cases, 1)
	assert.Equal(t, res.Records, back.Cases[0].Records)
}

// checkpoint makes the server run a checkpoint, as one of its own would during a phase.
func checkpoint(ctx context.Context, t *testing.T) {
	conn, err := pgx.Connect(ctx, pgtest.URL())
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CHECKPOINT")
	require.NoError(t, err)
}

// closeBuffer is a bytes.Buffer that records its Close.
type closeBuffer struct {
	bytes.Buffer
	closed bool
}

func (b *closeBuffer) Close() error { b.closed = true; return nil }

func TestDrainShare(t *testing.T) {
	r := Result{Pipeline: Rate{Seconds: 4}, Stages: Stages{DrainSeconds: 1}}
	assert.InDelta(t, 0.25, r.DrainShare(), 1e-9)
	assert.Zero(t, Result{Stages: Stages{DrainSeconds: 1}}.DrainShare(), "no pipeline time: no share")
}

func TestQuantile(t *testing.T) {
	ds := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 5}, {0.99, 10}, {1, 10}, {0, 1}} {
		assert.Equal(t, tc.want, quantile(ds, tc.q), "q=%v", tc.q)
	}
	assert.Zero(t, quantile(nil, 0.5))
}

// The medians table groups pass k's runs (CASE#k) under their case, takes the middle of each
// figure, and leaves out cases that ran once.
func TestWriteMedians(t *testing.T) {
	run := func(name string, pipe, raw, bpk float64) Result {
		return Result{Name: name, Pipeline: Rate{EventsPerSec: pipe}, Raw: Rate{EventsPerSec: raw}, Ratio: pipe / raw, BytesPerOpenKey: bpk,
			SinkWaitShare: raw / 10000, Storage: Storage{RowWritesPerRow: 1 + pipe/1000}}
	}
	rep := NewReport("test")
	rep.Cases = []Result{
		run("p1-1x", 120, 400, 9000), run("p6-100x", 80, 500, 410), run("once", 1, 2, 3),
		run("p1-1x#2", 100, 420, 9100), run("p6-100x#2", 70, 520, 400),
		run("p1-1x#3", 130, 380, 8900), run("p6-100x#3", 90, 480, 390), run("p6-100x#4", 85, 490, 420),
	}
	var out bytes.Buffer
	require.NoError(t, rep.WriteMedians(&out))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 4, out.String())
	assert.Equal(t, []string{"p1-1x", "3", "400", "120", "100", "130", "0.30", "4.0%", "1.12", "0", "9000"}, strings.Fields(lines[2]))
	assert.Equal(t, []string{"p6-100x", "4", "495", "82", "70", "90", "0.17", "5.0%", "1.08", "0", "405"}, strings.Fields(lines[3]), "an even count: the mean of the middle two")
	assert.NotContains(t, out.String(), "once")
}
