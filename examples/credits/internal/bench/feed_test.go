package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The feed's count adds up, its shares are near the configured ones, every id stays in one
// partition (so per-partition order decides it as the count did), and replaying the messages
// one by one reproduces the count.
func TestFeedCount(t *testing.T) {
	f := NewFeed(FeedConfig{Credits: 20_000, Accounts: 50, Partitions: 4, Seed: 7})
	partOf := map[string]int32{}
	first := map[string]string{} // id -> payload of the credit applied under it
	bal := map[string]int64{}
	var applied, dups, conflicts, unknown int64
	for {
		m, ok := f.Next()
		if !ok {
			break
		}
		c := m.Credit
		if p, seen := partOf[c.ID]; seen {
			require.Equal(t, p, m.Partition, "%s stays in its partition", c.ID)
		}
		partOf[c.ID] = m.Partition
		switch payload, seen := first[c.ID]; {
		case seen && payload == string(c.Payload()):
			dups++
		case seen:
			conflicts++
		case c.Account[0] == 'x':
			unknown++
		default:
			applied++
			first[c.ID] = string(c.Payload())
			bal[c.Account] += c.Amount
		}
	}
	exp := f.Expected()
	assert.Equal(t, int64(20_000), exp.Messages)
	assert.Equal(t, exp.Messages, exp.Applied+exp.Duplicates+exp.Conflicts+exp.Unknown)
	assert.Equal(t, []int64{applied, dups, conflicts, unknown}, []int64{exp.Applied, exp.Duplicates, exp.Conflicts, exp.Unknown})
	assert.InDelta(t, 0.10, float64(dups)/20_000, 0.01)
	assert.InDelta(t, 0.01, float64(conflicts)/20_000, 0.005)
	assert.InDelta(t, 0.02, float64(unknown)/20_000, 0.005)
	assert.Len(t, exp.Markers, int(applied))
	for i, b := range exp.Balances {
		assert.Equal(t, bal[Account(i)], b, Account(i))
	}
	var sum int64
	for _, e := range exp.Ends {
		sum += e
	}
	assert.Equal(t, exp.Messages, sum)
}
