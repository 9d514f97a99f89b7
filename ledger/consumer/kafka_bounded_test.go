package consumer

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/kafkatest"
	"github.com/streamledger/streamledger/ledger"
)

// waitReturn waits for Run to return by itself (a bounded run, or one that stops on an error),
// failing the test if it does not.
func (in *instance) waitReturn(t *testing.T) error {
	t.Helper()
	select {
	case in.result = <-in.done:
		in.ended = true
	case <-time.After(kafkatest.Timeout):
		t.Fatalf("%s: the bounded run did not return within %v", in.name, kafkatest.Timeout)
	}
	return in.result
}

// A bounded run of a group without commits starts each partition where auto.offset.reset
// says, resolved by Run from the partition's offsets: latest reads nothing and returns, as
// does earliest on a partition that is empty or whose records were all deleted; error stops
// Run with an error naming the partition.
func TestKafkaBoundedRunOfANewGroup(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"n": 3}})
	c.Produce(t, records("n", [][]string{{"w 1 A 1", "w 2 B 2", "w 6 A 3"}, {}, {"w 1 A 4", "w 2 B 5"}})...)
	c.DeleteRecords(t, "n", 2, 2) // partition 2: offsets 0-1 deleted, its log starts at its end
	for i, tc := range []struct {
		reset    string
		consumed int64
		err      string
	}{
		{reset: "latest"},
		{reset: "earliest", consumed: 3},
		{reset: "error", err: "auto.offset.reset is error"},
	} {
		t.Run(tc.reset, func(t *testing.T) {
			group := fmt.Sprintf("new-%d", i)
			mem := newMemory(t)
			kc := clientConfig(c, group, "")
			kc["auto.offset.reset"] = tc.reset
			in := start(t, tc.reset, kc, mem, []string{"n"}, func(cfg *Config[string]) { cfg.Until = Until{End: true} })
			err := in.waitReturn(t)
			if tc.err != "" {
				require.ErrorIs(t, err, ErrAssign)
				assert.Contains(t, err.Error(), tc.err)
				assert.Contains(t, err.Error(), "n[0]")
				return
			}
			require.NoError(t, err)
			in.chk.verify(t)
			assert.Equal(t, tc.consumed, in.c.Counters().Consumed)
			for p, co := range c.Committed(t, group, "n") {
				if p == 0 && tc.consumed > 0 {
					assert.Equal(t, int64(3), co.Offset, "partition 0 committed through its end")
					continue
				}
				assert.Negative(t, co.Offset, "partition %d: nothing read, nothing committed", p)
			}
		})
	}
}

// The last window holding data in the topic holds none of partition 0: every partition's
// end-of-input watermark still reaches its end, so its merged rows are written, no partial is
// left, and a later run decides events of that window as late in partition 0 too.
func TestKafkaBoundedFinalWindowMissingFromAPartition(t *testing.T) {
	const partitions = 4
	c := kafkatest.Start(t, kafkatest.Config{Topics: map[string]int32{"f": partitions}})
	payloads := [][]string{
		{"w 1 A 1", "w 6 A 2", "w 11 B 3"},
		{"w 2 A 4", "w 7 B 5", "w 31 A 6"},
		{"w 3 B 7", "w 32 A 8"},
		{"w 4 A 9", "w 33 B 10", "w 34 A 11"},
	}
	c.Produce(t, records("f", payloads)...)
	mem := newMemory(t)
	in := start(t, "bounded", clientConfig(c, "gf", ""), mem, []string{"f"}, func(cfg *Config[string]) {
		cfg.Until = Until{End: true}
	})
	require.NoError(t, in.waitReturn(t))
	in.chk.verify(t)
	last := at("30")
	rows, err := mem.Aggregates(context.Background(), last)
	require.NoError(t, err)
	assert.Len(t, rows, 3, "the last window's merged rows: lines A and B, and all")
	for p, ct := range progress(t, mem, "f", partitions) {
		assert.Equal(t, at("35"), ct, "partition %d closed through the end of the last window", p)
	}
	assert.NotContains(t, in.logs.String(), "left incomplete")

	c.Produce(t, records("f", [][]string{{"w 33 A 12", "w 40 A 13"}})...)
	again := start(t, "again", clientConfig(c, "gf", ""), mem, []string{"f"}, func(cfg *Config[string]) {
		cfg.Until = Until{End: true}
	})
	require.NoError(t, again.waitReturn(t))
	p0 := ledger.TopicPartition{Topic: "f", Partition: 0}
	d := again.chk.decisionsOf(p0)
	assert.Equal(t, Late, d[3], "an event of the last window, in partition 0")
	assert.Equal(t, Admitted, d[4], "a later one")
}
