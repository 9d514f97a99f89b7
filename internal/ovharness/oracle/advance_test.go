package oracle_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/examples/ov/feed"
	"github.com/streamledger/streamledger/internal/ovharness/oracle"
)

// advanceFeed is one partition's predictions around an idle advance to 12:20 before offset 2.
func advanceFeed() []feed.Record {
	return []feed.Record{
		pred("GVB:T1", "GVB:17", "GVB", "S1", 3, 10),   // 0: [12:00, 12:05), wm 12:01
		pred("GVB:T1", "GVB:17", "GVB", "S2", 4, 20),   // 1: wm 12:02; the partition goes idle here
		pred("GVB:T1", "GVB:17", "GVB", "S3", 4.5, 30), // 2: end 12:05 <= 12:20: late only by the advance
		pred("GVB:T1", "GVB:17", "GVB", "S4", 17, 40),  // 3: end 12:20 <= 12:20: late (the advance closed it)
		pred("GVB:T1", "GVB:17", "GVB", "S5", 21, 50),  // 4: end 12:25: admitted; 12:19 does not lower wm
		pred("GVB:T1", "GVB:17", "GVB", "S6", 28, 60),  // 5: admitted, wm 12:26
		pred("GVB:T1", "GVB:17", "GVB", "S7", 22, 70),  // 6: end 12:25 <= 12:26: late by its own data
	}
}

func TestIdleAdvanceMakesLaterRecordsLate(t *testing.T) {
	src := oracle.Source{Topic: predTopic, Partition: 0}
	plain, err := oracle.Compute(cfg(t, 1), advanceFeed())
	require.NoError(t, err)
	assert.Equal(t, []oracle.Ref{{Source: src, Offset: 6}}, plain.Late, "without the advance only offset 6 is late")

	c := cfg(t, 1)
	c.Advances = []oracle.Advance{{Source: src, Offset: 2, Watermark: t0.Add(20 * time.Minute)}}
	r, err := oracle.Compute(c, advanceFeed())
	require.NoError(t, err)
	assert.Equal(t, []oracle.Ref{{Source: src, Offset: 2}, {Source: src, Offset: 3}, {Source: src, Offset: 6}}, r.Late)
	assert.Equal(t, oracle.Counts{Consumed: 7, Admitted: 4, Late: 3}, r.Partitions[src].Counts)
	assert.Equal(t, t0.Add(28*time.Minute), r.Partitions[src].MaxEventTime)
	assert.Equal(t, t0.Add(26*time.Minute), r.Partitions[src].Watermark)
	assert.Equal(t, map[oracle.Source]time.Time{src: t0.Add(26 * time.Minute)}, r.ClosableThrough())
	assert.Equal(t, oracle.TripRow{Line: "GVB:17", Operator: "GVB", Stop: "S6", DelayS: 60, ObservedAt: t0.Add(28 * time.Minute)},
		r.Trips["GVB:T1"], "a late record offers no state row")

	// What the advance's own close batch wrote: the first window with offsets 0 and 1 only.
	rows, err := r.Aggregates(map[oracle.Source]time.Time{src: t0.Add(20 * time.Minute)})
	require.NoError(t, err)
	network := rows[oracle.AggKey{WindowStart: t0, Dimension: "network", DimensionID: "NL"}]
	assert.Equal(t, int64(2), network.Count)
	assert.Equal(t, 15.0, network.Mean)
	assert.Len(t, rows, 1+1+1+2, "network, line, operator and the stations S1 and S2 of the first window")

	rows, err = r.Aggregates(r.ClosableThrough())
	require.NoError(t, err)
	assert.Equal(t, int64(1), rows[oracle.AggKey{WindowStart: t0.Add(20 * time.Minute), Dimension: "network", DimensionID: "NL"}].Count,
		"offset 6 is late, offset 4 admitted")
	_, ok := rows[oracle.AggKey{WindowStart: t0.Add(15 * time.Minute), Dimension: "network", DimensionID: "NL"}]
	assert.False(t, ok, "the window the advance closed before its only record arrived stays empty")
}

func TestIdleAdvanceBelowWatermarkChangesNothing(t *testing.T) {
	src := oracle.Source{Topic: predTopic, Partition: 0}
	plain, err := oracle.Compute(cfg(t, 1), advanceFeed())
	require.NoError(t, err)
	c := cfg(t, 1)
	c.Advances = []oracle.Advance{{Source: src, Offset: 2, Watermark: t0}} // below wm 12:02
	r, err := oracle.Compute(c, advanceFeed())
	require.NoError(t, err)
	assert.Equal(t, plain.Late, r.Late)
	assert.Equal(t, plain.Partitions, r.Partitions)
}

func TestIdleAdvanceFirstAndLast(t *testing.T) {
	src := oracle.Source{Topic: predTopic, Partition: 0}
	// Before any event: the watermark is known from the advance alone.
	c := cfg(t, 1)
	c.Advances = []oracle.Advance{{Source: src, Offset: 0, Watermark: t0.Add(5 * time.Minute)}}
	r, err := oracle.Compute(c, advanceFeed()[:2])
	require.NoError(t, err)
	assert.Equal(t, int64(2), r.Partitions[src].Late)
	assert.Equal(t, t0.Add(5*time.Minute), r.Partitions[src].Watermark, "12:02 from the data does not lower it")

	// After the last record: nothing is late, the final watermark is the advance.
	c.Advances = []oracle.Advance{{Source: src, Offset: 2, Watermark: t0.Add(9 * time.Minute)}}
	r, err = oracle.Compute(c, advanceFeed()[:2])
	require.NoError(t, err)
	assert.Zero(t, r.Partitions[src].Late)
	assert.Equal(t, map[oracle.Source]time.Time{src: t0.Add(9 * time.Minute)}, r.ClosableThrough())
	assert.Equal(t, map[oracle.Source]int64{src: 2}, r.CommittedOffsets(r.ClosableThrough()))
}

func TestIdleAdvanceStaysInItsPartition(t *testing.T) {
	a, b := keyIn(t, "ARR:A", 0, 2), keyIn(t, "ARR:B", 1, 2)
	recs := []feed.Record{
		pred(a, "ARR:1", "ARR", "S1", 3, 1), pred(b, "ARR:1", "ARR", "S1", 3, 2),
		pred(a, "ARR:1", "ARR", "S1", 4, 3), pred(b, "ARR:1", "ARR", "S1", 4, 4),
		pos("ARR:9", 1, 52), // a position is never late
	}
	posSrc := oracle.Source{Topic: posTopic, Partition: feed.Partition([]byte("ARR:9"), 2)}
	c := cfg(t, 2)
	c.Advances = []oracle.Advance{
		{Source: oracle.Source{Topic: predTopic, Partition: 0}, Offset: 1, Watermark: t0.Add(time.Hour)},
		{Source: posSrc, Offset: 0, Watermark: t0.Add(time.Hour)},
	}
	r, err := oracle.Compute(c, recs)
	require.NoError(t, err)
	assert.Equal(t, []oracle.Ref{{Source: oracle.Source{Topic: predTopic, Partition: 0}, Offset: 1}}, r.Late)
	assert.Equal(t, int64(1), r.Partitions[posSrc].Admitted)
	assert.Equal(t, t0.Add(time.Hour), r.Partitions[posSrc].Watermark)
	assert.Contains(t, r.Vehicles, "ARR:9")
}

func TestIdleAdvanceErrors(t *testing.T) {
	for name, a := range map[string]oracle.Advance{
		"topic":     {Source: oracle.Source{Topic: "other"}, Watermark: t0},
		"partition": {Source: oracle.Source{Topic: predTopic, Partition: 1}, Watermark: t0},
		"offset":    {Source: oracle.Source{Topic: predTopic}, Offset: -1, Watermark: t0},
		"watermark": {Source: oracle.Source{Topic: predTopic}},
	} {
		c := cfg(t, 1)
		c.Advances = []oracle.Advance{a}
		_, err := oracle.Compute(c, advanceFeed())
		assert.Error(t, err, name)
	}
}
