package pipeline

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"

	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/ledger/consumer"
)

func TestGroupEvents(t *testing.T) {
	tp := ledger.TopicPartition{Topic: "t", Partition: 3}
	for _, tc := range []struct {
		name string
		call func(h consumer.Hook)
		want string // "" for no line
	}{
		{"revoked", func(h consumer.Hook) { h.(consumer.HookRevoke).OnRevoke(consumer.RevokeInfo{TopicPartition: tp}) }, ""},
		{"lost", func(h consumer.Hook) {
			h.(consumer.HookRevoke).OnRevoke(consumer.RevokeInfo{TopicPartition: tp, Lost: true, Dropped: 7})
		}, `msg="partition lost" partition=t[3] dropped=7`},
		{"committed", func(h consumer.Hook) {
			h.(consumer.HookCommit).OnCommit(consumer.CommitInfo{Reason: consumer.CommitTick})
		}, ""},
		{"fenced", func(h consumer.Hook) {
			h.(consumer.HookCommit).OnCommit(consumer.CommitInfo{Reason: consumer.CommitTick, Failed: make([]ledger.Commit, 2),
				Err: kafka.NewError(kafka.ErrIllegalGeneration, "gen", false)})
		}, `msg="commit refused" reason=tick partitions=2 fenced=true`},
		{"not fenced", func(h consumer.Hook) {
			h.(consumer.HookCommit).OnCommit(consumer.CommitInfo{Reason: consumer.CommitRevoke, Failed: make([]ledger.Commit, 1),
				Err: errors.New("timed out")})
		}, `msg="commit refused" reason=revoke partitions=1 fenced=false`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			tc.call(GroupEvents(slog.New(slog.NewTextHandler(&buf, nil))))
			if tc.want == "" {
				assert.Empty(t, buf.String())
				return
			}
			assert.True(t, strings.Contains(buf.String(), tc.want), "%q lacks %q", buf.String(), tc.want)
		})
	}
}
