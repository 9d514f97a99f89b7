package oracle_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/examples/ov/event"
	"github.com/streamledger/streamledger/examples/ov/feed"
	"github.com/streamledger/streamledger/internal/ovharness/oracle"
	"github.com/streamledger/streamledger/internal/quantile"
	"github.com/streamledger/streamledger/window"
)

const (
	posTopic  = "pos"
	predTopic = "pred"
)

var t0 = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

func cfg(t testing.TB, partitions int32) oracle.Config {
	d, err := event.NewDecoder(event.Config{})
	require.NoError(t, err)
	return oracle.Config{PositionsTopic: posTopic, PredictionsTopic: predTopic, Partitions: partitions,
		WindowSize: 5 * time.Minute, Lateness: 2 * time.Minute, Decoder: d}
}

func pred(trip, line, op, stop string, minute float64, delay int32) feed.Record {
	at := t0.Add(time.Duration(minute * float64(time.Minute)))
	p := event.Prediction{TripID: trip, VehicleID: "V:1", Line: line, Operator: op, Stop: stop, DelayS: delay, ObservedAt: at}
	return feed.Record{Topic: predTopic, Key: []byte(trip), Value: event.AppendPrediction(nil, p), Timestamp: at.Add(time.Second)}
}

func pos(vehicle string, minute float64, lat float64) feed.Record {
	at := t0.Add(time.Duration(minute * float64(time.Minute)))
	p := event.Position{VehicleID: vehicle, TripID: "T", Line: "GVB:1", Operator: "GVB", Lat: lat, Lon: 4.9, Bearing: 10, ObservedAt: at}
	return feed.Record{Topic: posTopic, Key: []byte(vehicle), Value: event.AppendPosition(nil, p), Timestamp: at.Add(time.Second)}
}

func TestOnePartition(t *testing.T) {
	recs := []feed.Record{
		pred("GVB:T1", "GVB:17", "GVB", "S1", 3, 60),  // [12:00, 12:05)
		pred("GVB:T1", "GVB:17", "GVB", "S2", 6, 120), // [12:05, 12:10); wm 12:04
		pred("GVB:T1", "GVB:17", "GVB", "S1", 1, 30),  // end 12:05 > wm 12:04: admitted
		pred("GVB:T1", "GVB:17", "GVB", "S3", 8, 200), // wm 12:06
		pred("GVB:T1", "GVB:17", "GVB", "S1", 2, 999), // end 12:05 <= 12:06: late
		{Topic: predTopic, Key: []byte("GVB:T1"), Value: []byte(`{"version":1,`), Timestamp: t0},
		pred("GVB:T1", "GVB:17", "GVB", "S4", 4.5, 1), // late too
	}
	r, err := oracle.Compute(cfg(t, 1), recs)
	require.NoError(t, err)
	src := oracle.Source{Topic: predTopic, Partition: 0}
	assert.Equal(t, oracle.Counts{Consumed: 7, Admitted: 4, Late: 2, DeadLettered: 1}, r.Partitions[src].Counts)
	assert.Equal(t, r.Partitions[src].Counts, r.Total)
	assert.Equal(t, []oracle.Ref{{Source: src, Offset: 4}, {Source: src, Offset: 6}}, r.Late)
	require.Len(t, r.DeadLetters, 1)
	assert.Equal(t, int64(5), r.DeadLetters[0].Offset)
	assert.ErrorIs(t, r.DeadLetters[0].Err, event.ErrSyntax)
	assert.Equal(t, t0.Add(8*time.Minute), r.Partitions[src].MaxEventTime)
	assert.Equal(t, map[oracle.Source]time.Time{src: t0.Add(6 * time.Minute)}, r.ClosableThrough())
	assert.Equal(t, oracle.TripRow{Line: "GVB:17", Operator: "GVB", Stop: "S3", DelayS: 200, ObservedAt: t0.Add(8 * time.Minute)}, r.Trips["GVB:T1"])

	none, err := r.Aggregates(nil)
	require.NoError(t, err)
	assert.Empty(t, none)

	rows, err := r.Aggregates(r.ClosableThrough())
	require.NoError(t, err)
	end := t0.Add(5 * time.Minute)
	p90 := quantile.Linear([]float64{30, 60}, 0.9)
	assert.Equal(t, 57.0, p90)
	want := oracle.AggRow{WindowEnd: end, Count: 2, Mean: 45, P90: p90, Max: 60, Min: 30}
	withOp := want
	withOp.Operator = "GVB"
	s1 := want
	s1.Count, s1.Mean, s1.P90, s1.Max = 2, 45, p90, 60
	assert.Equal(t, map[oracle.AggKey]oracle.AggRow{
		{WindowStart: t0, Dimension: "line", DimensionID: "GVB:17"}:  withOp,
		{WindowStart: t0, Dimension: "operator", DimensionID: "GVB"}: withOp,
		{WindowStart: t0, Dimension: "network", DimensionID: "NL"}:   want,
		{WindowStart: t0, Dimension: "station", DimensionID: "S1"}:   s1,
	}, rows)

	start, ok := r.LastCompleteWindow(r.ClosableThrough())
	require.True(t, ok)
	assert.Equal(t, t0, start)

	// Offset 1 is in [12:05, 12:10), still open at 12:06: the commit stops there.
	assert.Equal(t, map[oracle.Source]int64{src: 1}, r.CommittedOffsets(r.ClosableThrough()))
	assert.Equal(t, map[oracle.Source]int64{src: 0}, r.CommittedOffsets(nil))
	assert.Equal(t, map[oracle.Source]int64{src: 7}, r.CommittedOffsets(map[oracle.Source]time.Time{src: t0.Add(10 * time.Minute)}))
}

// Records in a lost range are counted in Records and Lost and decided not at all: they
// neither feed a window nor move the watermark, and later offsets keep their own.
func TestLostRange(t *testing.T) {
	recs := []feed.Record{
		pred("GVB:T1", "GVB:17", "GVB", "S1", 3, 60),  // admitted, wm 12:01
		pred("GVB:T1", "GVB:17", "GVB", "S2", 6, 120), // lost
		pred("GVB:T1", "GVB:17", "GVB", "S1", 1, 30),  // lost
		pred("GVB:T1", "GVB:17", "GVB", "S3", 8, 200), // admitted, wm 12:06
		pred("GVB:T1", "GVB:17", "GVB", "S1", 2, 999), // late
		{Topic: predTopic, Key: []byte("GVB:T1"), Value: []byte(`{"version":1,`), Timestamp: t0},
	}
	src := oracle.Source{Topic: predTopic, Partition: 0}
	c := cfg(t, 1)
	c.Lost = []oracle.LostRange{{Source: src, From: 1, To: 3}}
	r, err := oracle.Compute(c, recs)
	require.NoError(t, err)
	p := r.Partitions[src]
	assert.Equal(t, oracle.Counts{Consumed: 4, Admitted: 2, Late: 1, DeadLettered: 1}, p.Counts)
	assert.Equal(t, int64(6), p.Records)
	assert.Equal(t, int64(2), p.Lost)
	assert.Equal(t, []oracle.Ref{{Source: src, Offset: 4}}, r.Late)
	require.Len(t, r.DeadLetters, 1)
	assert.Equal(t, int64(5), r.DeadLetters[0].Offset)
	assert.Equal(t, "S3", r.Trips["GVB:T1"].Stop)
}

// keyIn finds a trip id that the partitioner places in partition p of n.
func keyIn(t *testing.T, prefix string, p, n int32) string {
	for i := range 1000 {
		k := fmt.Sprintf("%s%d", prefix, i)
		if feed.Partition([]byte(k), n) == p {
			return k
		}
	}
	t.Fatalf("no key of prefix %s in partition %d", prefix, p)
	return ""
}

func TestPartitionsMerge(t *testing.T) {
	a, b := keyIn(t, "RET:A", 0, 2), keyIn(t, "RET:B", 1, 2)
	var recs []feed.Record
	for i := range 300 { // more than window.DefaultExactLimit in the merged row: the digest decides P90
		recs = append(recs, pred(a, "RET:D", "RET", "S1", float64(i%5)/2, int32(i)))
		recs = append(recs, pred(b, "RET:D", "RET", "S2", float64(i%5)/2, int32(1000-i)))
	}
	recs = append(recs, pred(a, "RET:D", "RET", "S1", 12, 0), pred(b, "RET:D", "RET", "S2", 9, 0))
	recs = append(recs, pos("RET:5001", 1, 51.9), pos("RET:5001", 2, 51.8), pos("RET:5001", 2, 51.7), pos("RET:5001", 1.5, 51.6))
	r, err := oracle.Compute(cfg(t, 2), recs)
	require.NoError(t, err)
	assert.Equal(t, int64(0), r.Total.Late)
	assert.Equal(t, oracle.VehicleRow{TripID: "T", RouteID: "GVB:1", Operator: "GVB", Lat: 51.7, Lon: 4.9, Bearing: 10,
		ObservedAt: t0.Add(2 * time.Minute)}, r.Vehicles["RET:5001"], "a tie goes to the later record")

	sa, sb := oracle.Source{Topic: predTopic, Partition: 0}, oracle.Source{Topic: predTopic, Partition: 1}
	closable := r.ClosableThrough()
	assert.Equal(t, t0.Add(10*time.Minute), closable[sa])
	assert.Equal(t, t0.Add(7*time.Minute), closable[sb])

	onlyA, err := r.Aggregates(map[oracle.Source]time.Time{sa: closable[sa]})
	require.NoError(t, err)
	assert.Empty(t, onlyA, "partition 1 has closed nothing: no window is complete")
	network := oracle.AggKey{WindowStart: t0, Dimension: "network", DimensionID: "NL"}

	rows, err := r.Aggregates(closable)
	require.NoError(t, err)
	got := rows[network]
	sa0, sb0 := window.NewStats(), window.NewStats()
	for i := range 300 {
		require.NoError(t, sa0.Add(float64(i)))
		require.NoError(t, sb0.Add(float64(1000-i)))
	}
	merged, err := window.Merge(sa0, sb0)
	require.NoError(t, err)
	assert.Equal(t, int64(600), got.Count)
	assert.Equal(t, 0.0, got.Min)
	assert.Equal(t, 1000.0, got.Max)
	assert.InDelta(t, 500, got.Mean, 1e-9)
	assert.Equal(t, merged.Quantile(window.Linear, 0.9), got.P90)
	assert.Equal(t, "RET", rows[oracle.AggKey{WindowStart: t0, Dimension: "line", DimensionID: "RET:D"}].Operator)
	assert.Equal(t, "", got.Operator)
	assert.Equal(t, int64(300), rows[oracle.AggKey{WindowStart: t0, Dimension: "station", DimensionID: "S2"}].Count)

	start, ok := r.LastCompleteWindow(closable)
	require.True(t, ok)
	assert.Equal(t, t0, start)
}

func TestConfigErrors(t *testing.T) {
	c := cfg(t, 0)
	_, err := oracle.Compute(c, nil)
	assert.Error(t, err)
	c = cfg(t, 1)
	_, err = oracle.Compute(c, []feed.Record{{Topic: "other"}})
	assert.ErrorContains(t, err, "other")
}

// TestFeedAgainstIntent runs the oracle over a generated feed: its dead letters are exactly the
// records generated malformed, and nearly all records generated late are late.
func TestFeedAgainstIntent(t *testing.T) {
	recs, stats, err := feed.Generate(feed.Config{Seed: 11, Scale: 0.03, Start: time.Date(2026, 3, 10, 6, 0, 0, 0, feed.CET()),
		Duration: time.Hour, PositionsTopic: posTopic, PredictionsTopic: predTopic,
		DisorderShare: 0.1, LateShare: 0.01, MalformedShare: 0.005})
	require.NoError(t, err)
	r, err := oracle.Compute(cfg(t, 4), recs)
	require.NoError(t, err)
	var malformed int
	for _, rec := range recs {
		if rec.Intent == feed.Malformed {
			malformed++
		}
	}
	require.Len(t, r.DeadLetters, malformed)
	for _, l := range r.DeadLetters {
		assert.Equal(t, feed.Malformed, l.Record.Intent)
	}
	assert.Equal(t, int64(len(recs)), r.Total.Consumed)
	assert.Equal(t, r.Total.Consumed, r.Total.Admitted+r.Total.Late+r.Total.DeadLettered)
	assert.LessOrEqual(t, r.Total.Late, int64(stats.Late))
	assert.GreaterOrEqual(t, r.Total.Late, int64(stats.Late)*8/10, "most records meant to be late are")
	t.Logf("%d records: %+v; %d open at most (%d partials)", len(recs), r.Total, r.MaxOpen, r.MaxOpenPartials)
}

// TestMorningPeakOpenWindows checks the national feed against the seed's figure: at the
// morning peak at least 6,994 (window, key) aggregates are open at once.
func TestMorningPeakOpenWindows(t *testing.T) {
	scale, want := 1.0, 6994
	if testing.Short() {
		scale, want = 0.2, 6994/5
	}
	recs, _, err := feed.Generate(feed.Config{Seed: 1, Scale: scale, Start: time.Date(2026, 3, 10, 7, 50, 0, 0, feed.CET()),
		Duration: 12 * time.Minute, PositionsTopic: posTopic, PredictionsTopic: predTopic})
	require.NoError(t, err)
	r, err := oracle.Compute(cfg(t, 12), recs)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, r.MaxOpen, want)
	t.Logf("scale %v: %d (window, key) aggregates open at once at %v (%d per-partition partials)", scale, r.MaxOpen,
		r.MaxOpenAt.In(feed.CET()).Format("15:04:05"), r.MaxOpenPartials)
}
