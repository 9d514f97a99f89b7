package effecttest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/faults"
	"github.com/streamledger/streamledger/sink"
)

var errCrash = errors.New("process crashed")

// consumer is a one-partition consumer of credits that applies its log in batches of size
// and commits the offset after each batch's Apply returned: the crash points of the
// exactly-once boundary are around Apply and the commit.
type consumer struct {
	log       []Credit
	size      int
	committed int
}

// run processes from the committed offset; crashAfterApply stops after the Apply of the
// batch holding that offset, before committing. It returns at the first error, as a crashed
// process would.
func (c *consumer) run(ctx context.Context, e Sink, crashAfterApply int) ([]sink.Outcome, error) {
	var outs []sink.Outcome
	for off := c.committed; off < len(c.log); {
		end := min(off+c.size, len(c.log))
		res, err := e.Apply(ctx, c.log[off:end])
		if err != nil {
			return outs, err
		}
		for _, r := range res {
			outs = append(outs, r.Outcome)
		}
		if off <= crashAfterApply && crashAfterApply < end {
			return outs, errCrash
		}
		c.committed, off = end, end
	}
	return outs, nil
}

// crashCase is one crash point of the exactly-once boundary.
type crashCase struct {
	point      faults.Point // hook point that crashes (0: none)
	terminate  bool         // the server kills the session instead of the hook returning
	afterApply bool         // the consumer crashes after Apply returned, before the offset commit
	afterBoth  bool         // no crash; the partition is replayed from the start afterwards
	durable    bool         // the batch's markers and effects exist at the crash
}

// The crash points per operation (batches of one) and inside a batch (three operations in
// one transaction): at each point every operation's marker and effect are compared with what
// the point leaves, and after the restart with exactly one effect each.
func crashPoints(t *testing.T, a Adapter) {
	for _, size := range []int{1, 3} {
		for _, tc := range []struct {
			name string
			crashCase
		}{
			{"before the transaction", crashCase{point: faults.BeforeBegin}},
			{"inside it, after the markers", crashCase{point: faults.AfterMarker}},
			{"inside it, server kills the session", crashCase{point: faults.AfterMarker, terminate: true}},
			{"inside it, before commit", crashCase{point: faults.BeforeCommit}},
			{"after commit, before Apply returned", crashCase{point: faults.AfterCommit, durable: true}},
			{"after Apply returned, before the offset commit", crashCase{afterApply: true, durable: true}},
			{"after both commits", crashCase{afterBoth: true, durable: true}},
		} {
			t.Run(fmt.Sprintf("batch of %d/%s", size, tc.name), func(t *testing.T) {
				crashAt(t, a, size, tc.crashCase)
			})
		}
	}
}

func crashAt(t *testing.T, a Adapter, size int, tc crashCase) {
	ctx := Ctx(t)
	db := a.New(t, map[string]int64{"a7": 100, "a8": 100, "a9": 100})
	log := []Credit{{OpID: "e41", Account: "a8", Amount: 1}, {OpID: "e42", Account: "a7", Amount: 10}, {OpID: "e43", Account: "a9", Amount: 100}}
	var armed atomic.Bool
	e := db.Effects(t, Config{Retry: sink.RetryPolicy{MaxAttempts: 1}}, false) // a crashed process does not retry
	ctx = faults.With(ctx, func(ctx context.Context, p faults.Point, at faults.Attempt) error {
		if p != tc.point || !armed.CompareAndSwap(true, false) {
			return nil
		}
		if tc.terminate {
			db.Terminate(ctx, t, at.Conn)
			return nil
		}
		return errCrash
	})
	c := &consumer{log: log, size: size}
	if size == 1 {
		// e41 is applied and committed alone; the crash strikes in e42's batch.
		pre := &consumer{log: log[:1], size: 1}
		_, err := pre.run(ctx, e, -1)
		require.NoError(t, err)
		c.committed = pre.committed
	}
	armed.Store(tc.point != 0)
	crashAt := -1
	if tc.afterApply {
		crashAt = 1
	}
	_, err := c.run(ctx, e, crashAt)
	if tc.afterBoth {
		require.NoError(t, err)
		c.committed = 0 // a replay of the partition, as after an offset reset
	} else {
		require.Error(t, err, "the run crashes")
	}

	// The state at the crash, operation by operation.
	want := map[string][]byte{}
	wantApplied := map[string]int{}
	for i, cr := range log {
		inCrashed := i >= c.committed && i < c.committed+size
		if i < c.committed || (inCrashed && tc.durable) || tc.afterBoth {
			want[cr.OpID] = cr.Hash()
			wantApplied[cr.OpID] = 1
		}
	}
	assert.Equal(t, want, db.Markers(t), "markers at the crash")
	assert.Equal(t, wantApplied, db.Applied(t), "effects at the crash")

	// Restart: the broker redelivers from the committed offset.
	outs, err := c.run(ctx, e, -1)
	require.NoError(t, err)
	for k, out := range outs {
		off := len(log) - len(outs) + k
		wantOut := sink.Applied
		if _, ok := want[log[off].OpID]; ok {
			wantOut = sink.Duplicate
		}
		assert.Equal(t, wantOut, out, "%s redelivered", log[off].OpID)
	}
	assert.Equal(t, map[string]int{"e41": 1, "e42": 1, "e43": 1}, db.Applied(t), "one effect each")
	assert.Equal(t, int64(110), db.Balance(t, "a7"))
	assert.Equal(t, int64(101), db.Balance(t, "a8"))
	assert.Equal(t, int64(200), db.Balance(t, "a9"))
	assert.Len(t, db.Markers(t), 3)
}

// A commit whose acknowledgement is lost is retried; the retry finds the batch's markers
// with its token and returns the results of the attempt that committed, once.
func commitAcknowledgementLost(t *testing.T, a Adapter) {
	ctx := Ctx(t)
	db := a.New(t, map[string]int64{"a7": 100})
	var lost atomic.Bool
	var attempts atomic.Int32
	e := db.Effects(t, Config{}, false)
	ctx = faults.With(ctx, func(ctx context.Context, p faults.Point, at faults.Attempt) error {
		if p == faults.BeforeBegin {
			attempts.Add(1)
		}
		if p == faults.AfterCommit && lost.CompareAndSwap(false, true) {
			db.Terminate(ctx, t, at.Conn)
			return a.ConnLost
		}
		return nil
	})
	lost.Store(true) // disarmed
	_, err := e.Apply(ctx, []Credit{{OpID: "d1", Account: "a7", Amount: 1}})
	require.NoError(t, err)
	lost.Store(false)
	batch := []Credit{
		{OpID: "e1", Account: "a7", Amount: 10},
		{OpID: "d1", Account: "a7", Amount: 1},
		{OpID: "u1", Account: "nobody", Amount: 10},
		{OpID: "e2", Account: "a7", Amount: 20},
	}
	res, err := e.Apply(ctx, batch)
	require.NoError(t, err)
	assert.Equal(t, int32(3), attempts.Load(), "the lost acknowledgement was retried")
	outcomes := []sink.Outcome{res[0].Outcome, res[1].Outcome, res[2].Outcome, res[3].Outcome}
	assert.Equal(t, []sink.Outcome{sink.Applied, sink.Duplicate, sink.Rejected, sink.Applied}, outcomes,
		"the results of the attempt that committed, not duplicates of itself")
	assert.Equal(t, int64(131), db.Balance(t, "a7"))
	assert.Equal(t, map[string]int{"d1": 1, "e1": 1, "e2": 1}, db.Applied(t))
}

// A transient failure of the batch (a serialization failure or deadlock before its commit)
// retries the batch whole: every operation is applied by the retry, once.
func retryWhole(t *testing.T, a Adapter) {
	ctx := Ctx(t)
	db := a.New(t, map[string]int64{"a": 0, "b": 0})
	var failed atomic.Bool
	var attempts []int
	e := db.Effects(t, Config{}, false)
	ctx = faults.With(ctx, func(ctx context.Context, p faults.Point, at faults.Attempt) error {
		if p == faults.BeforeBegin {
			attempts = append(attempts, at.N)
		}
		if p == faults.BeforeCommit && failed.CompareAndSwap(false, true) {
			return a.Transient
		}
		return nil
	})
	var batch []Credit
	for i := range 50 {
		batch = append(batch, Credit{OpID: fmt.Sprintf("op-%02d", i), Account: []string{"a", "b"}[i%2], Amount: int64(i)})
	}
	res, err := e.Apply(ctx, batch)
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2}, attempts)
	for i, r := range res {
		assert.Equal(t, sink.Applied, r.Outcome, batch[i].OpID)
	}
	assert.Len(t, db.Applied(t), 50)
	assert.Len(t, db.Markers(t), 50)
	assert.Equal(t, int64(600+625), db.Balance(t, "a")+db.Balance(t, "b"))
}
