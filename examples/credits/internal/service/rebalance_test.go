package service_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/examples/credits/internal/credit"
	"github.com/streamledger/streamledger/internal/kafkatest"
)

// A second consumer joins the group: the first commits the durable prefix of every partition
// it gives up before handing it over, so the new owner resumes right after it and nothing is
// redelivered; a graceful shutdown commits the rest. Commits happen only on revocation and
// shutdown here (an hour's commit interval), so a missing revocation commit would show up as
// duplicates.
func TestRebalanceCommitsTheDurablePrefix(t *testing.T) {
	for _, assignor := range []string{"range", "cooperative-sticky"} {
		t.Run(assignor, func(t *testing.T) {
			e := newEnv(t, 2)
			opening := map[string]int64{"a0": 0, "a1": 0}
			e.open(opening)
			ops := map[string]expect{}
			batch := func(b int) {
				for p := range int32(2) {
					var cs []credit.Credit
					for i := range 10 {
						c := credit.Credit{ID: fmt.Sprintf("b%d-p%d-%d", b, p, i), Account: fmt.Sprintf("a%d", p), Amount: int64(1 + i)}
						ops[c.ID] = expect{applied: true, account: c.Account, amount: c.Amount}
						cs = append(cs, c)
					}
					e.produce(p, cs...)
				}
			}
			config := e.config("g")
			config.CommitInterval = time.Hour
			config.Kafka["partition.assignment.strategy"] = assignor

			batch(1)
			a := e.start("A", config)
			require.Eventually(t, func() bool { return a.decided(20) }, kafkatest.Timeout, 5*time.Millisecond)
			assert.Equal(t, []int64{-1, -1}, e.committed("g", 2), "nothing committed before the rebalance")

			config2 := e.config("g")
			config2.CommitInterval = time.Hour
			config2.Kafka["partition.assignment.strategy"] = assignor
			b := e.start("B", config2)
			require.Eventually(t, func() bool {
				c := e.committed("g", 2)
				return c[0] == 10 || c[1] == 10
			}, kafkatest.Timeout, 5*time.Millisecond, "the revoked partition's prefix committed")

			batch(2)
			require.Eventually(t, func() bool {
				a.mu.Lock()
				b.mu.Lock()
				defer a.mu.Unlock()
				defer b.mu.Unlock()
				return len(a.decisions)+len(b.decisions) == 40
			}, kafkatest.Timeout, 5*time.Millisecond)
			require.NoError(t, a.stop(t))
			require.NoError(t, b.stop(t))
			assert.Equal(t, []int64{20, 20}, e.committed("g", 2), "the shutdowns committed the rest")

			ca, cb := a.svc.Counters(), b.svc.Counters()
			assert.Equal(t, int64(40), ca.Applied+cb.Applied)
			assert.Zero(t, ca.Duplicate+cb.Duplicate, "nothing redelivered to the new owner")
			assert.NotZero(t, cb.Applied, "B took a partition over")
			for _, d := range b.decisions {
				assert.GreaterOrEqual(t, d.Offset, int64(10), "B resumed after A's committed prefix: %s", d.Credit.ID)
			}
			e.verify("after the handover", opening, ops)
		})
	}
}
