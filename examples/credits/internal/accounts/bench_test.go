package accounts_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/streamledger/streamledger/examples/credits/internal/accounts"
	"github.com/streamledger/streamledger/examples/credits/internal/credit"
	"github.com/streamledger/streamledger/internal/pgtest"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/postgres"
)

// BenchmarkApply measures one credit through the effect sink against the real server: the
// transaction that inserts the marker and credits the balance (new), and the one that finds
// the marker (duplicate), side by side. credits/s is the rate of one consumer partition.
func BenchmarkApply(b *testing.B) {
	db := pgtest.New(b)
	ctx := context.Background()
	st, err := accounts.New(db.Pool, accounts.Config{Schema: db.Schema})
	if err != nil {
		b.Fatal(err)
	}
	fx, err := postgres.NewEffects(db.Pool, postgres.EffectConfig{Schema: db.Schema})
	if err != nil {
		b.Fatal(err)
	}
	if err := st.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	if err := fx.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	for i := range 16 {
		if _, err := st.Open(ctx, fmt.Sprintf("a%d", i), 0); err != nil {
			b.Fatal(err)
		}
	}
	apply := func(c credit.Credit) sink.Outcome {
		out, err := fx.Apply(ctx, c.Operation(), func(ctx context.Context, tx pgx.Tx) (pgconn.CommandTag, error) {
			return st.Credit(ctx, tx, c)
		})
		if err != nil {
			b.Fatal(err)
		}
		return out
	}
	for _, mode := range []string{"new", "duplicate"} {
		b.Run(mode, func(b *testing.B) {
			dup := credit.Credit{ID: "dup", Account: "a0", Amount: 1}
			apply(dup)
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				c := dup
				if mode == "new" {
					c = credit.Credit{ID: fmt.Sprintf("%s-%d", b.Name(), n), Account: fmt.Sprintf("a%d", n%16), Amount: 1}
				}
				if got := apply(c); (got == sink.Duplicate) != (mode == "duplicate") {
					b.Fatalf("%s: outcome %v", c.ID, got)
				}
				n++
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "credits/s")
		})
	}
}
