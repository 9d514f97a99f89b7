package service_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/examples/credits/internal/accounts"
	"github.com/streamledger/streamledger/examples/credits/internal/credit"
	"github.com/streamledger/streamledger/examples/credits/internal/service"
	"github.com/streamledger/streamledger/internal/faults"
	"github.com/streamledger/streamledger/internal/kafkatest"
)

// letters reads the dead-letter topic back: "partition@offset class" per letter, with the
// decoded letters.
func (e *env) letters() ([]string, []dlq.DeadLetter) {
	e.t.Helper()
	var out []string
	var dls []dlq.DeadLetter
	for _, r := range e.kc.ReadAll(e.t, dlq.DefaultTopic(topic)) {
		hs := make([]dlq.Header, len(r.Headers))
		for i, h := range r.Headers {
			hs[i] = dlq.Header{Key: h.Key, Value: h.Value}
		}
		d, err := dlq.Decode(r.Key, r.Value, hs)
		require.NoError(e.t, err)
		require.Equal(e.t, r.Partition, d.Partition, "a dead letter keeps its partition")
		out = append(out, d.Record.String()+" "+d.ErrorClass)
		dls = append(dls, d)
	}
	return out, dls
}

// Invalid credits go to the dead-letter topic with their class and leave no marker; a
// conflicting payload under a known id is dead-lettered as a conflict; a re-serialized copy
// of an applied credit is a duplicate, not a conflict.
func TestDeadLetters(t *testing.T) {
	e := newEnv(t, 1)
	opening := map[string]int64{"a1": 100, "full": math.MaxInt64 - 5}
	e.open(opening)
	values := []string{
		`{"op_id":"c1","account":"a1","amount":10}`,                // 0 applied
		`{ "amount": 10, "account": "a1", "op_id": "c1" }`,         // 1 the same credit, re-serialized: duplicate
		`{"op_id":"c1","account":"a1","amount":99}`,                // 2 another credit under c1: conflict
		`{"op_id":"u1","account":"nobody","amount":10}`,            // 3 unknown account
		`{"op_id":"z1","account":"a1","amount":0}`,                 // 4 non-positive amount
		`{"op_id":"n1","account":"a1","amount":-5}`,                // 5 negative amount
		`{"op_id":"m1","account":"a1","amount":10`,                 // 6 malformed JSON
		`{"account":"a1","amount":10}`,                             // 7 no op_id
		`{"op_id":"o1","account":"full","amount":10}`,              // 8 the balance would overflow: refused by the database
		`{"op_id":"c2","account":"a1","amount":5}`,                 // 9 applied
		`{"op_id":"u1","account":"nobody","amount":10}`,            // 10 unknown again: dead-lettered again, still no marker
		`{"op_id":"c1","account":"a1","amount":10,"note":"retry"}`, // 11 unknown field: malformed
	}
	e.produceRaw(0, values...)
	in := e.start("consumer", e.config("g"))
	e.waitCommitted("g", int64(len(values)))
	require.NoError(t, in.stop(t))

	assert.Equal(t, []string{
		"c1:applied",
		"c1:duplicate",
		"c1:dead-lettered:" + service.ClassConflict,
		"u1:dead-lettered:" + service.ClassUnknownAccount,
		"@4:dead-lettered:" + credit.ClassAmount,
		"@5:dead-lettered:" + credit.ClassAmount,
		"@6:dead-lettered:" + credit.ClassMalformed,
		"@7:dead-lettered:" + credit.ClassMissingField,
		"o1:dead-lettered:" + accounts.ClassRejected,
		"c2:applied",
		"u1:dead-lettered:" + service.ClassUnknownAccount,
		"@11:dead-lettered:" + credit.ClassMalformed,
	}, in.outcomes())

	got, dls := e.letters()
	assert.Equal(t, []string{
		"credits/0@2 " + service.ClassConflict,
		"credits/0@3 " + service.ClassUnknownAccount,
		"credits/0@4 " + credit.ClassAmount,
		"credits/0@5 " + credit.ClassAmount,
		"credits/0@6 " + credit.ClassMalformed,
		"credits/0@7 " + credit.ClassMissingField,
		"credits/0@8 " + accounts.ClassRejected,
		"credits/0@10 " + service.ClassUnknownAccount,
		"credits/0@11 " + credit.ClassMalformed,
	}, got)
	for _, d := range dls {
		assert.Equal(t, values[d.Offset], string(d.Value), "the original value of offset %d", d.Offset)
		assert.NotEmpty(t, d.ErrorMessage)
	}
	assert.Contains(t, dls[0].ErrorMessage, `credit "c1": the id was used before for another credit`)
	assert.Contains(t, dls[1].ErrorMessage, `account "nobody" does not exist`)

	// Only the applied credits left markers and entries.
	e.verify("after the run", opening, map[string]expect{
		"c1": {applied: true, account: "a1", amount: 10},
		"c2": {applied: true, account: "a1", amount: 5},
		"u1": {}, "z1": {}, "n1": {}, "m1": {}, "o1": {},
	})
}

// A dead letter counts only once its delivery is confirmed: while the dead-letter topic
// refuses it, the offset stays before it although later credits are applied, and it is
// committed past once the letter is delivered.
func TestDeadLetterCommittedOnlyWhenDelivered(t *testing.T) {
	e := newEnv(t, 1)
	opening := map[string]int64{"a1": 100}
	e.open(opening)
	fault := e.kc.FailProduce(dlq.DefaultTopic(topic), -1, nil)
	e.produceRaw(0,
		`{"op_id":"c1","account":"a1","amount":1}`,
		`not json`,
		`{"op_id":"c2","account":"a1","amount":2}`,
		`{"op_id":"c3","account":"a1","amount":3}`,
	)
	in := e.start("consumer", e.config("g"))
	require.Eventually(t, func() bool { return in.decided(4) }, kafkatest.Timeout, 5*time.Millisecond)
	require.Eventually(t, func() bool { return fault.Hits() >= 2 }, kafkatest.Timeout, 5*time.Millisecond, "the letter was refused, then sent again")
	assert.Equal(t, []int64{1}, e.committed("g", 1), "committed up to the undelivered letter, not past it")
	e.verify("while the letter is refused", opening, map[string]expect{
		"c1": {applied: true, account: "a1", amount: 1},
		"c2": {applied: true, account: "a1", amount: 2},
		"c3": {applied: true, account: "a1", amount: 3},
	})

	fault.Remove()
	e.waitCommitted("g", 4)
	require.NoError(t, in.stop(t))
	got, _ := e.letters()
	require.NotEmpty(t, got)
	for _, l := range got {
		assert.Equal(t, "credits/0@1 "+credit.ClassMalformed, l)
	}
}

// A failure that is not the credit's fault (here a database error the sink does not retry,
// injected before the transaction of the batch holding c2) stops the service before that
// batch is recorded: nothing of it or past it is committed, and a restart applies it. One
// credit per transaction, then batches.
func TestInfrastructureFailureStops(t *testing.T) {
	for _, batch := range []int{-1, 0} {
		t.Run(fmt.Sprintf("Batch=%d", batch), func(t *testing.T) {
			infrastructureFailure(t, batch)
		})
	}
}

func infrastructureFailure(t *testing.T, batch int) {
	e := newEnv(t, 1)
	opening := map[string]int64{"a1": 100, "a2": 100, "a3": 100}
	e.open(opening)
	cs := []credit.Credit{
		{ID: "c1", Account: "a1", Amount: 1},
		{ID: "c2", Account: "a2", Amount: 2},
		{ID: "c3", Account: "a3", Amount: 3},
	}
	e.produce(0, cs...)
	outage := errors.New("database unavailable (injected)")
	cfg := e.config("g")
	cfg.Batch = batch
	var (
		armed  atomic.Bool // one partition: its batches run one after another
		failed []int64     // the offsets of the batch that failed
	)
	cfg.Hooks.BeforeApply = func(ds []service.Delivery) {
		if slices.ContainsFunc(ds, func(d service.Delivery) bool { return d.Credit.ID == "c2" }) && !armed.Load() {
			armed.Store(true)
			for _, d := range ds {
				failed = append(failed, d.Offset)
			}
		}
	}
	cfg.SinkFaults = func(_ context.Context, p faults.Point, _ faults.Attempt) error {
		if armed.Load() && p == faults.BeforeBegin {
			return outage
		}
		return nil
	}
	first := e.start("first", cfg)
	err := first.wait(t)
	require.ErrorIs(t, err, outage, "Run returns the failure")
	require.NotEmpty(t, failed)
	if batch < 0 {
		assert.Equal(t, []int64{1}, failed, "c2 alone")
	}
	before := cs[:failed[0]]
	want := []string{}
	ops := map[string]expect{}
	for i, c := range cs {
		ops[c.ID] = expect{applied: i < len(before), account: c.Account, amount: c.Amount}
		if i < len(before) {
			want = append(want, c.ID+":applied")
		}
	}
	assert.Equal(t, want, first.outcomes())
	wantCommitted := failed[0]
	if wantCommitted == 0 {
		wantCommitted = -1 // nothing to commit
	}
	assert.Equal(t, []int64{wantCommitted}, e.committed("g", 1), "committed up to the failed batch")
	e.verify("after the failure", opening, ops)

	second := e.start("second", e.config("g"))
	e.waitCommitted("g", 3)
	require.NoError(t, second.stop(t))
	want = []string{}
	for _, c := range cs[failed[0]:] {
		want = append(want, c.ID+":applied")
	}
	assert.Equal(t, want, second.outcomes())
	for _, c := range cs {
		ops[c.ID] = expect{applied: true, account: c.Account, amount: c.Amount}
	}
	e.verify("after the restart", opening, ops)
}
