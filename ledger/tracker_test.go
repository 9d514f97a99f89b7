package ledger_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/ledger"
)

func TestTrackerCommitsWhatMoved(t *testing.T) {
	tr := ledger.NewTracker()
	a := ledger.TopicPartition{Topic: "predictions", Partition: 1}
	b := ledger.TopicPartition{Topic: "predictions", Partition: 0}
	c := ledger.TopicPartition{Topic: "positions", Partition: 0}
	pa, err := tr.Assign(a, -1)
	require.NoError(t, err)
	pb, err := tr.Assign(b, 40)
	require.NoError(t, err)
	_, err = tr.Assign(c, -1)
	require.NoError(t, err)
	_, err = tr.Assign(a, -1)
	require.ErrorIs(t, err, ledger.ErrAssigned)

	assert.Empty(t, tr.Commits(), "nothing released yet")

	pa.SetWatermark(t0)
	require.NoError(t, pa.Add(10, ledger.Flush(1)))
	require.NoError(t, pa.Flushed(1))
	require.NoError(t, pb.Add(40, ledger.Ack()))
	require.NoError(t, pb.Add(41, ledger.Ack()))
	assert.EqualValues(t, 2, tr.Pending(), "a's entry is durable, b's two wait for acks")

	commits := tr.Commits()
	require.Equal(t, []ledger.Commit{
		{TopicPartition: a, Offset: 11, Metadata: ledger.EncodeMetadata(ledger.Checkpoint{Watermark: t0})},
	}, commits)
	assert.Equal(t, commits, tr.Commits(), "a failed commit is reported again")
	tr.MarkCommitted(commits...)
	assert.Empty(t, tr.Commits())

	require.NoError(t, pb.Ack(40))
	commits = tr.Commits()
	require.Len(t, commits, 1)
	assert.Equal(t, ledger.Commit{TopicPartition: b, Offset: 41}, commits[0], "no watermark, no metadata")
	tr.MarkCommitted(commits...)

	pa.SetWatermark(t0.Add(time.Minute)) // an idle advance at the committed offset
	commits = tr.Commits()
	require.Len(t, commits, 1)
	assert.EqualValues(t, 11, commits[0].Offset, "same offset, new metadata")
	cp, err := ledger.DecodeMetadata(commits[0].Metadata)
	require.NoError(t, err)
	assert.Equal(t, t0.Add(time.Minute), cp.Watermark)

	assert.Equal(t, []ledger.TopicPartition{c, b, a}, tr.Assigned())
}

func TestTrackerRevokeReturnsTheFinalCommitAndDropsState(t *testing.T) {
	tr := ledger.NewTracker()
	tp := ledger.TopicPartition{Topic: "t", Partition: 3}
	p, err := tr.Assign(tp, -1)
	require.NoError(t, err)
	end := t0.Add(5 * time.Minute)
	require.NoError(t, p.Add(0, ledger.Window(end)))
	require.NoError(t, p.Add(1, ledger.Window(end.Add(5*time.Minute))))
	require.NoError(t, p.CloseThrough(end))

	c, ok, err := tr.Revoke(tp)
	require.NoError(t, err)
	require.True(t, ok)
	assert.EqualValues(t, 1, c.Offset, "only the durable prefix; offset 1 is redelivered to the next owner")
	assert.Nil(t, tr.Partition(tp))
	_, _, err = tr.Revoke(tp)
	require.ErrorIs(t, err, ledger.ErrNotAssigned)

	// Reassigned at the committed offset, nothing new: nothing to commit on the next revoke.
	_, err = tr.Assign(tp, 1)
	require.NoError(t, err)
	_, ok, err = tr.Revoke(tp)
	require.NoError(t, err)
	assert.False(t, ok)
}

func TestTrackerDropCommitsNothing(t *testing.T) {
	tr := ledger.NewTracker()
	tp := ledger.TopicPartition{Topic: "t", Partition: 0}
	p, _ := tr.Assign(tp, -1)
	require.NoError(t, p.Add(0, ledger.Condition{}))
	tr.Drop(tp)
	assert.Empty(t, tr.Commits())
	tr.MarkCommitted(ledger.Commit{TopicPartition: tp, Offset: 1}) // late success of a revoked partition: ignored
	assert.Nil(t, tr.Partition(tp))
}

func TestTrackerNeverCommitsBelowTheCommittedOffset(t *testing.T) {
	tr := ledger.NewTracker()
	tp := ledger.TopicPartition{Topic: "t", Partition: 0}
	p, _ := tr.Assign(tp, 100)
	require.NoError(t, p.Add(50, ledger.Condition{})) // a consumer reset to an earlier offset
	assert.Empty(t, tr.Commits())
}

func TestCommitFormats(t *testing.T) {
	c := ledger.Commit{TopicPartition: ledger.TopicPartition{Topic: "t", Partition: 3}, Offset: 42, Metadata: "v1;wm=1"}
	for _, verb := range []string{"%v", "%+v", "%s"} {
		assert.Equal(t, `t[3]@42 metadata="v1;wm=1"`, fmt.Sprintf(verb, c), verb)
	}
}
