package accounts_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/streamledger/streamledger/examples/credits/internal/accounts"
	"github.com/streamledger/streamledger/examples/credits/internal/credit"
	"github.com/streamledger/streamledger/sink"
)

// benchAccounts is how many accounts the benchmark's credits spread over.
const benchAccounts = 10_000

// BenchmarkApply measures batches of credits through the effect sink against the real servers,
// Postgres and MySQL, one transaction per batch, at batch sizes 1, 10, 100 and 1000 side by
// side: credits whose markers are new (new), and the same batch again, every credit finding
// its marker (duplicate). credits/s is the rate of one connection applying batches one after
// another.
func BenchmarkApply(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) { benchmarkApply(b, be) })
	}
}

func benchmarkApply(b *testing.B, be backend) {
	ctx := context.Background()
	st, seed := be.open(b, accounts.Config{})
	seed(benchAccounts)
	apply := func(b *testing.B, cs []credit.Credit, want sink.Outcome) {
		res, err := st.Apply(ctx, cs, nil)
		if err != nil {
			b.Fatal(err)
		}
		for i, r := range res {
			if r.Outcome != want {
				b.Fatalf("%s: outcome %v, want %v (%v)", cs[i].ID, r.Outcome, want, r.Err)
			}
		}
	}
	seq := 0
	batch := func(size int) []credit.Credit {
		cs := make([]credit.Credit, size)
		for i := range cs {
			cs[i] = credit.Credit{ID: fmt.Sprintf("op-%d", seq), Account: fmt.Sprintf("a%d", (seq*7919)%benchAccounts), Amount: 1}
			seq++
		}
		return cs
	}
	for _, size := range []int{1, 10, 100, 1000} {
		for _, mode := range []string{"new", "duplicate"} {
			b.Run(fmt.Sprintf("batch=%d/%s", size, mode), func(b *testing.B) {
				dup := batch(size)
				apply(b, dup, sink.Applied)
				b.ReportAllocs()
				n := 0
				for b.Loop() {
					if mode == "new" {
						b.StopTimer()
						cs := batch(size)
						b.StartTimer()
						apply(b, cs, sink.Applied)
					} else {
						apply(b, dup, sink.Duplicate)
					}
					n += size
				}
				b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "credits/s")
			})
		}
	}
}
