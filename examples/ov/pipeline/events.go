package pipeline

import (
	"errors"
	"log/slog"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/streamledger/streamledger/ledger/consumer"
)

// The messages of the log lines [GroupEvents] writes; the reliability harness counts them in
// a processor's log.
const (
	// LostMessage: a partition was given up without its final write and commit, because the
	// client declared the assignment lost (the group moved on without this member: a session
	// that expired, a fenced member epoch). The next owner replays it from the last commit.
	LostMessage = "partition lost"
	// CommitRefusedMessage: the broker refused an offset commit. fenced=true says it refused
	// it for the member's generation or epoch (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
	// FENCED_INSTANCE_ID, STALE_MEMBER_EPOCH): a member the group no longer counts tried to
	// commit.
	CommitRefusedMessage = "commit refused"
)

// GroupEvents returns a hook that logs, at warning level, each partition lost and each offset
// commit the broker refused. The runtime logs these too; these lines are the pipeline's own,
// with stable messages.
func GroupEvents(log *slog.Logger) consumer.Hook { return groupEvents{log} }

type groupEvents struct{ log *slog.Logger }

func (e groupEvents) OnRevoke(i consumer.RevokeInfo) {
	if i.Lost {
		e.log.Warn(LostMessage, "partition", i.TopicPartition.String(), "dropped", i.Dropped)
	}
}

func (e groupEvents) OnCommit(i consumer.CommitInfo) {
	if i.Err != nil {
		e.log.Warn(CommitRefusedMessage, "reason", i.Reason.String(), "partitions", len(i.Failed), "fenced", Fenced(i.Err),
			"error", i.Err)
	}
}

// Fenced reports whether err refuses a commit for the member's generation or epoch.
func Fenced(err error) bool {
	var ke kafka.Error
	if !errors.As(err, &ke) {
		return false
	}
	switch ke.Code() {
	case kafka.ErrIllegalGeneration, kafka.ErrUnknownMemberID, kafka.ErrFencedInstanceID, kafka.ErrStaleMemberEpoch:
		return true
	}
	return false
}
