package effectbatch

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/sink"
)

func op(id, payload string) sink.Operation { return sink.Operation{ID: id, Payload: []byte(payload)} }

var (
	applied  = sink.Result{Outcome: sink.Applied}
	noEffect = sink.Result{Outcome: sink.Rejected, Err: sink.ErrNoEffect}
)

func outcomes(res []sink.Result) []sink.Outcome {
	out := make([]sink.Outcome, len(res))
	for i, r := range res {
		out[i] = r.Outcome
	}
	return out
}

// Rounds decided in memory: the first operation of each ID reaches the database; later ones
// are decided against its marker, or try again after a rejection.
func TestRounds(t *testing.T) {
	ops := []sink.Operation{op("a", "1"), op("b", "1"), op("a", "1"), op("b", "2"), op("c", "1"), op("c", "2"), op("c", "2")}
	b, err := New(ops, bytes.NewReader(make([]byte, TokenSize)), nil)
	require.NoError(t, err)
	pending := b.Start()
	assert.Equal(t, []int{0, 1, 4}, pending, "the first operation of each ID")
	// a accepted and applied, b found committed with its own payload, c accepted but rejected.
	b.Res[1] = b.Against(1, b.Hashes[1][:])
	require.NoError(t, b.Record([]int{0, 4}, []sink.Result{applied, noEffect}))
	assert.Equal(t, []string{"c"}, b.RejectedIDs([]int{0, 4}))
	pending = b.Follow(pending)
	assert.Equal(t, []int{5}, pending, "the next operation of the rejected ID")
	require.NoError(t, b.Record([]int{5}, []sink.Result{applied}))
	assert.Empty(t, b.Follow(pending))
	assert.Equal(t, []sink.Outcome{sink.Applied, sink.Duplicate, sink.Duplicate, sink.Conflict, sink.Rejected, sink.Applied, sink.Duplicate},
		outcomes(b.Res))
	var conflict *sink.ConflictError
	require.ErrorAs(t, b.Res[3].Err, &conflict)
	assert.Equal(t, b.Hashes[1][:], conflict.StoredHash, "against the stored marker")

	b.Ran()
	id, ok := b.Replay()
	assert.True(t, ok)
	assert.Equal(t, "a", id, "an applied operation tells whether the attempt committed")
	b.Res = nil
	b.Committed()
	assert.Equal(t, sink.Applied, b.Res[0].Outcome)
}

func TestRefusedIDs(t *testing.T) {
	long := errors.New("too long")
	ops := []sink.Operation{op("ok", "1"), op("long", "1"), op("long", "2")}
	b, err := New(ops, bytes.NewReader(make([]byte, TokenSize)), func(o sink.Operation) error {
		if o.ID == "long" {
			return long
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []int{0}, b.Start())
	assert.Equal(t, []sink.Outcome{0, sink.Rejected, sink.Rejected}, outcomes(b.Res))
	assert.ErrorIs(t, b.Res[2].Err, long)
}

func TestMisuse(t *testing.T) {
	assert.ErrorIs(t, Check([]sink.Operation{op("a", "")}, false), sink.ErrInvalid)
	assert.ErrorIs(t, Check([]sink.Operation{op("a", ""), op("", "")}, true), sink.ErrInvalid)
	assert.NoError(t, Check(nil, true))
	_, err := New([]sink.Operation{op("a", "")}, bytes.NewReader(nil), nil)
	assert.Error(t, err, "no token")
	b, err := New([]sink.Operation{op("a", "")}, bytes.NewReader(make([]byte, TokenSize)), nil)
	require.NoError(t, err)
	b.Start()
	for name, res := range map[string][]sink.Result{
		"the effect miscounts":           nil,
		"no outcome":                     {{}},
		"applied, with an error":         {{Outcome: sink.Applied, Err: sink.ErrNoEffect}},
		"rejected without a reason":      {{Outcome: sink.Rejected}},
		"an outcome of the marker table": {{Outcome: sink.Duplicate}},
	} {
		err := b.Record([]int{0}, res)
		assert.ErrorIs(t, err, sink.ErrInvalid, name)
		assert.NotErrorIs(t, err, sink.ErrNoEffect, "%s: the effect's error is not the call's", name)
		assert.Zero(t, b.Res[0], "%s: nothing recorded", name)
	}
	_, ok := b.Replay()
	assert.False(t, ok, "no attempt ran")
}
