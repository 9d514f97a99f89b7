package consumer

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/sinktest"
)

// outcome is everything a run leaves behind that the number of workers must not change.
type outcome struct {
	closes  []sink.CloseBatch
	upserts []sinktest.Upsert
	commits []CommitInfo
	aggs    []sink.Aggregate
	counts  Counters
}

// The same input decided by the polling goroutine, by one worker or by several gives identical
// sink writes, commits and commit metadata: ticks, writes and commits wait for every message
// dispatched before them, and each partition's messages are decided in offset order.
func TestWorkersDoNotChangeTheOutcome(t *testing.T) {
	for seed := range uint64(4) {
		input := workerInput(seed, 900)
		want := runWorkers(t, -1, input)
		require.NotEmpty(t, want.closes)
		require.NotEmpty(t, want.upserts)
		require.NotEmpty(t, want.aggs)
		require.Positive(t, want.counts.DeadLettered)
		require.Positive(t, want.counts.Late)
		shared, sharedMsgs := 0, 0
		for _, u := range want.upserts {
			for _, r := range u.Rows {
				if k, _ := r.Key[0].(string); strings.HasPrefix(k, "shared/") {
					shared++
				}
			}
		}
		for _, s := range input {
			if strings.HasPrefix(s.payload, "k ") {
				sharedMsgs++
			}
		}
		require.Positive(t, shared)
		require.Less(t, shared, sharedMsgs, "rows of a shared key are written once per flush")
		for _, workers := range []int{1, 2, 7} {
			got := runWorkers(t, workers, input)
			assert.Equal(t, want.closes, got.closes, "seed %d, %d workers: close batches", seed, workers)
			assert.Equal(t, want.upserts, got.upserts, "seed %d, %d workers: state upserts", seed, workers)
			assert.Equal(t, want.commits, got.commits, "seed %d, %d workers: commits and their metadata", seed, workers)
			assert.Equal(t, want.aggs, got.aggs, "seed %d, %d workers: merged rows", seed, workers)
			assert.Equal(t, want.counts, got.counts, "seed %d, %d workers: counters", seed, workers)
		}
	}
}

// step is one message of a partition, or a tick (payload "").
type step struct {
	tp      ledger.TopicPartition
	payload string
}

// workerInput interleaves n messages of four partitions at random, with a tick every now and
// then: window values, state rows (some of keys every partition updates), late events, decode
// errors and clock-only events.
func workerInput(seed uint64, n int) []step {
	r := rand.New(rand.NewPCG(seed, 77))
	parts := []ledger.TopicPartition{tp("t", 0), tp("t", 1), tp("t", 2), tp("u", 0)}
	clock := make([]int, len(parts)) // seconds after T0, per partition
	var out []step
	for range n {
		i := r.IntN(len(parts))
		clock[i] += r.IntN(20)
		at := fmt.Sprintf("%d:%02d", clock[i]/60, clock[i]%60)
		var pl string
		switch k := r.IntN(20); {
		case k == 0:
			pl = "x garbled"
		case k == 1 && clock[i] > 600:
			back := clock[i] - 600
			pl = fmt.Sprintf("w %d:%02d L%d %d", back/60, back%60, r.IntN(3), r.IntN(100))
		case k == 2:
			pl = "c " + at
		case k < 8:
			pl = fmt.Sprintf("ws %s L%d %d", at, r.IntN(5), r.IntN(300))
		case k == 8:
			pl = "s " + at
		case k == 9:
			pl = fmt.Sprintf("k %s K%d", at, r.IntN(3)) // keys shared by every partition
		default:
			pl = fmt.Sprintf("w %s L%d %d", at, r.IntN(5), r.IntN(300))
		}
		out = append(out, step{tp: parts[i], payload: pl})
		if r.IntN(60) == 0 {
			out = append(out, step{})
		}
	}
	return append(out, step{})
}

// runWorkers feeds input to a processor with the given workers and returns what it left.
func runWorkers(t *testing.T, workers int, input []step) outcome {
	t.Helper()
	h := newHarness(t, func(c *Config[string]) { c.Workers = workers })
	next := map[ledger.TopicPartition]int64{}
	var as []assignment
	for _, s := range input {
		if _, ok := next[s.tp]; !ok && s.payload != "" {
			next[s.tp] = 0
			as = append(as, assignment{tp: s.tp, committed: -1})
		}
	}
	require.NoError(t, h.p.assign(h.ctx, as, nil))
	delivered := 0
	for _, s := range input {
		if s.payload != "" {
			h.p.dispatch(message(s.tp, next[s.tp], s.payload))
			next[s.tp]++
			continue
		}
		// Every dead letter sent so far is confirmed before the tick, whatever order the
		// workers sent them in.
		h.p.barrier()
		for ; delivered < h.dlq.count(); delivered++ {
			h.dlq.deliver(delivered, nil)
		}
		h.tick()
	}
	require.NoError(t, h.p.fatal())
	h.chk.mu.Lock()
	commits := slices.Clone(h.chk.commits)
	h.chk.mu.Unlock()
	for i := range commits {
		commits[i].Duration = 0 // wall-clock time, the only thing allowed to differ
	}
	return outcome{
		closes: h.mem.Closes(), upserts: h.mem.Upserts(), commits: commits,
		aggs: aggregates(t, h.mem, T0, T0.Add(24*60*60e9)), counts: h.p.counters.snapshot(),
	}
}
