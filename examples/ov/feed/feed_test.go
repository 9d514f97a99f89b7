package feed_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/streamledger/streamledger/examples/ov/event"
	"github.com/streamledger/streamledger/examples/ov/feed"
	"github.com/streamledger/streamledger/window"
)

func at(hour, minute int) time.Time { return time.Date(2026, 3, 10, hour, minute, 0, 0, feed.CET()) }

// small is a feed of a small network over the morning peak with every path exercised.
func small() feed.Config {
	return feed.Config{Seed: 7, Scale: 0.03, Start: at(6, 30), Duration: 2 * time.Hour,
		WindowSize: 5 * time.Minute, Lateness: 2 * time.Minute, MaxDisorder: time.Minute,
		DisorderShare: 0.1, LateShare: 0.01, MalformedShare: 0.005}
}

func TestPartitionMatchesKafka(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int32
	}{ // Kafka's UtilsTest.testMurmur2 vectors
		{"21", -973932308}, {"foobar", -790332482}, {"a-little-bit-long-string", -985981536},
		{"a-little-bit-longer-string", -1486304829}, {"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
		{"abc", 479470107},
	} {
		want := (c.want & 0x7fffffff) % 1000
		assert.Equal(t, want, feed.Partition([]byte(c.in), 1000), c.in)
	}
	// franz-go's key partitioner is Kafka's default partitioner.
	kafka := kgo.StickyKeyPartitioner(nil).ForTopic("t")
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		key := fmt.Appendf(nil, "GVB:%d:%d", rng.IntN(100000), rng.IntN(7))
		n := int32(1 + rng.IntN(64))
		require.Equal(t, int32(kafka.Partition(&kgo.Record{Key: key}, int(n))), feed.Partition(key, n), "key %s", key)
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	cfg := small()
	cfg.Duration = 20 * time.Minute
	a, sa, err := feed.Generate(cfg)
	require.NoError(t, err)
	b, sb, err := feed.Generate(cfg)
	require.NoError(t, err)
	require.Equal(t, len(a), len(b))
	require.Equal(t, a, b)
	require.Equal(t, sa, sb)

	cfg.Seed++
	c, _, err := feed.Generate(cfg)
	require.NoError(t, err)
	assert.NotEqual(t, a[:100], c[:min(100, len(c))])
}

// TestGenerateDecodes checks every record against the decoder: normal and late records are
// valid and keyed by their vehicle or trip, malformed ones are rejected. Timestamps never go
// back.
func TestGenerateDecodes(t *testing.T) {
	cfg := small()
	recs, stats, err := feed.Generate(cfg)
	require.NoError(t, err)
	d, err := event.NewDecoder(event.Config{})
	require.NoError(t, err)

	var positions, predictions, late, malformed int
	faults := map[string]int{}
	for i, r := range recs {
		if i > 0 {
			require.False(t, r.Timestamp.Before(recs[i-1].Timestamp), "record %d goes back in time", i)
		}
		require.Equal(t, r.Timestamp, r.Timestamp.Truncate(time.Millisecond))
		var err error
		switch r.Topic {
		case feed.DefaultPositionsTopic:
			var p event.Position
			if p, err = d.DecodePosition(r.Value, r.Timestamp); err == nil {
				positions++
				require.Equal(t, p.VehicleID, string(r.Key))
				require.False(t, p.ObservedAt.After(r.Timestamp))
			}
		case feed.DefaultPredictionsTopic:
			var p event.Prediction
			if p, err = d.DecodePrediction(r.Value, r.Timestamp); err == nil {
				predictions++
				require.Equal(t, p.TripID, string(r.Key))
				require.False(t, p.ObservedAt.After(r.Timestamp))
				if r.Intent == feed.Late {
					late++
					require.Greater(t, r.Timestamp.Sub(p.ObservedAt), cfg.Lateness+cfg.WindowSize)
				}
			}
		default:
			t.Fatalf("record %d on topic %q", i, r.Topic)
		}
		if r.Intent == feed.Malformed {
			require.Error(t, err, "malformed record %d (%s) accepted: %s", i, r.Fault, r.Value)
			malformed++
			faults[r.Fault]++
		} else {
			require.NoError(t, err, "record %d: %s", i, r.Value)
		}
	}
	assert.Equal(t, stats.Records, len(recs))
	assert.Equal(t, stats.Malformed, malformed)
	assert.Equal(t, stats.Late, late)
	assert.Equal(t, stats.Faults, faults)
	assert.Equal(t, stats.Positions+stats.Predictions, len(recs))
	assert.Len(t, faults, 4, "every kind of corruption appears: %v", faults)
	// The shares are drawn per record: binomial, so well within these bounds for this size.
	assert.InDelta(t, cfg.MalformedShare, float64(malformed)/float64(len(recs)), cfg.MalformedShare/2)
	assert.InDelta(t, cfg.LateShare, float64(late)/float64(stats.Predictions), cfg.LateShare/2)
	t.Logf("%d records: %d positions, %d predictions (%d late), %d malformed %v", len(recs), positions, predictions, late, malformed, faults)
}

// TestDisorderWithinLateness replays each partition as a processor sees it: a record that is
// not meant to be late never arrives after the partition's watermark passed its window, and
// nearly every record meant to be late does.
func TestDisorderWithinLateness(t *testing.T) {
	cfg := small()
	recs, _, err := feed.Generate(cfg)
	require.NoError(t, err)
	d, err := event.NewDecoder(event.Config{})
	require.NoError(t, err)
	const partitions = 4
	maxSeen := map[string]time.Time{}
	var late, lateIntended, maxBehind int64
	for _, r := range recs {
		if r.Intent == feed.Malformed {
			continue
		}
		var at time.Time
		if r.Topic == feed.DefaultPredictionsTopic {
			p, err := d.DecodePrediction(r.Value, r.Timestamp)
			require.NoError(t, err)
			at = p.ObservedAt
		} else {
			p, err := d.DecodePosition(r.Value, r.Timestamp)
			require.NoError(t, err)
			at = p.ObservedAt
		}
		tp := fmt.Sprintf("%s/%d", r.Topic, feed.Partition(r.Key, partitions))
		seen, ok := maxSeen[tp]
		_, end := window.Bounds(at, cfg.WindowSize)
		isLate := ok && !end.After(seen.Add(-cfg.Lateness))
		if r.Intent == feed.Late {
			lateIntended++
			if isLate {
				late++
			}
		} else {
			require.False(t, isLate, "%s: %s arrives after the watermark %v", tp, r.Value, seen.Add(-cfg.Lateness))
			if ok && seen.After(at) {
				maxBehind = max(maxBehind, int64(seen.Sub(at)))
			}
		}
		if !ok || at.After(seen) {
			maxSeen[tp] = at
		}
	}
	assert.LessOrEqual(t, time.Duration(maxBehind), cfg.MaxDisorder)
	assert.Greater(t, time.Duration(maxBehind), cfg.MaxDisorder/2, "records are out of order")
	assert.Greater(t, lateIntended, int64(20))
	assert.GreaterOrEqual(t, float64(late), 0.9*float64(lateIntended))
	t.Logf("disorder up to %v; %d of %d records meant to be late are", time.Duration(maxBehind), late, lateIntended)
}

// TestDelays checks the punctuality the network produces against Dutch figures: 6 to 20% of
// predictions late, more at the peak than at midday, and a heavy tail.
func TestDelays(t *testing.T) {
	d, err := event.NewDecoder(event.Config{})
	require.NoError(t, err)
	share := func(start time.Time, dur time.Duration) (float64, int32) {
		recs, stats, err := feed.Generate(feed.Config{Seed: 3, Scale: 0.05, Start: start, Duration: dur})
		require.NoError(t, err)
		var worst int32
		for _, r := range recs {
			if r.Topic == feed.DefaultPredictionsTopic {
				p, err := d.DecodePrediction(r.Value, r.Timestamp)
				require.NoError(t, err)
				worst = max(worst, p.DelayS)
			}
		}
		return float64(stats.LatePredictions) / float64(stats.Predictions), worst
	}
	peak, peakWorst := share(at(7, 30), time.Hour)
	midday, _ := share(at(12, 0), time.Hour)
	day, dayWorst := share(at(5, 0), 14*time.Hour)
	t.Logf("late: %.3f at the peak, %.3f at midday, %.3f from 5:00 to 19:00; worst %d s, %d s", peak, midday, day, peakWorst, dayWorst)
	for _, s := range []float64{peak, midday, day} {
		assert.True(t, s >= 0.06 && s <= 0.20, "share late %.3f", s)
	}
	assert.Greater(t, peak, midday)
	assert.Greater(t, dayWorst, int32(1800), "a heavy tail: some vehicle is more than half an hour late")
}

// TestNationalPeak checks the national network at scale 1 at the morning peak.
func TestNationalPeak(t *testing.T) {
	g, err := feed.New(feed.Config{Seed: 1, Start: at(8, 0), Duration: 2 * time.Minute})
	require.NoError(t, err)
	for {
		if _, ok := g.Next(); !ok {
			break
		}
	}
	s := g.Stats()
	assert.True(t, s.PeakVehicles >= 4000 && s.PeakVehicles <= 6000, "vehicles at the peak: %d", s.PeakVehicles)
	assert.True(t, s.Stops >= 40000 && s.Stops <= 50000, "stops: %d", s.Stops)
	var codes []string
	for _, op := range g.Operators() {
		codes = append(codes, op.Code)
		assert.Positive(t, op.Lines, op.Code)
	}
	assert.ElementsMatch(t, []string{"ARR", "CXX", "GVB", "HTM", "RET", "QBUZZ", "EBS", "KEOLIS", "NS"}, codes)
	t.Logf("%d vehicles, %d lines, %d stops (%d served)", s.PeakVehicles, s.Lines, s.Stops, s.StopsServed)
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []feed.Config{
		{},
		{Duration: time.Hour, Scale: -1},
		{Duration: time.Hour, Scale: 51},
		{Duration: time.Hour, MaxDisorder: 3 * time.Minute},
		{Duration: time.Hour, LateShare: 1.5},
		{Duration: time.Hour, MalformedShare: -0.1},
		{Duration: time.Hour, PositionsTopic: "x", PredictionsTopic: "x"},
		{Duration: time.Hour, PositionInterval: time.Millisecond},
	} {
		_, err := feed.New(c)
		assert.ErrorIs(t, err, feed.ErrConfig, "%+v", c)
	}
}

func TestJSONLRoundTrip(t *testing.T) {
	cfg := small()
	cfg.Duration = 10 * time.Minute
	cfg.MalformedShare = 0.2
	recs, _, err := feed.Generate(cfg)
	require.NoError(t, err)
	recs = append(recs,
		feed.Record{Topic: "t", Key: []byte{0xff, 0x00}, Value: []byte{'{', 0xe2, 0x82}, Timestamp: at(9, 0).UTC()},
		feed.Record{Topic: "t", Key: nil, Value: nil, Timestamp: at(9, 0).UTC()},
		feed.Record{Topic: "t", Key: []byte{}, Value: []byte{}, Timestamp: at(9, 0).UTC()},
	)
	var buf bytes.Buffer
	w := feed.NewWriter(&buf)
	for _, r := range recs {
		require.NoError(t, w.Write(r))
	}
	require.NoError(t, w.Flush())
	assert.Equal(t, len(recs), strings.Count(buf.String(), "\n"))

	back, err := feed.ReadAll(&buf)
	require.NoError(t, err)
	require.Equal(t, recs, back)

	for _, bad := range []string{`{"topic":"t"}`, `{"timestamp":"2026-03-10T08:00:00Z"}`, `not json`,
		`{"topic":"t","timestamp":"2026-03-10T08:00:00Z","value":"a","value_b64":"YQ=="}`,
		`{"topic":"t","timestamp":"2026-03-10T08:00:00Z","intent":"maybe"}`} {
		_, err := feed.NewReader(strings.NewReader("\n" + bad + "\n")).Next()
		assert.ErrorIs(t, err, feed.ErrFile, bad)
		assert.ErrorContains(t, err, "line 2")
	}
	_, err = feed.NewReader(strings.NewReader("")).Next()
	assert.Equal(t, io.EOF, err)
}

func TestPacer(t *testing.T) {
	wall := at(12, 0)
	var slept []time.Duration
	p := &feed.Pacer{Speed: 60, Now: func() time.Time { return wall },
		Sleep: func(_ context.Context, d time.Duration) error {
			slept = append(slept, d)
			wall = wall.Add(d)
			return nil
		}}
	sim := at(7, 0)
	ctx := context.Background()
	require.NoError(t, p.Wait(ctx, sim))                     // anchors
	require.NoError(t, p.Wait(ctx, sim.Add(time.Minute)))    // a simulated minute: a second
	require.NoError(t, p.Wait(ctx, sim.Add(30*time.Second))) // already due
	wall = wall.Add(5 * time.Second)
	require.NoError(t, p.Wait(ctx, sim.Add(2*time.Minute))) // behind schedule: no wait
	assert.Equal(t, []time.Duration{time.Second}, slept)
	now, ok := p.SimTime(wall)
	require.True(t, ok)
	assert.Equal(t, sim.Add(6*time.Minute), now)

	anchored := &feed.Pacer{Speed: 2, Now: func() time.Time { return wall }}
	anchored.Anchor(sim, wall.Add(-time.Minute))
	now, ok = anchored.SimTime(wall)
	require.True(t, ok)
	assert.Equal(t, sim.Add(2*time.Minute), now)
	require.NoError(t, anchored.Wait(ctx, sim.Add(time.Minute)), "already due")

	fast := &feed.Pacer{}
	require.NoError(t, fast.Wait(ctx, sim))
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	assert.Error(t, fast.Wait(cancelled, sim))
}
