package mysql_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/mytest"
	"github.com/streamledger/streamledger/sink"
	mysink "github.com/streamledger/streamledger/sink/mysql"
)

// BenchmarkEffectsApply measures the effect sink alone (an effect that writes nothing and
// accepts every operation): one transaction per batch of new operations (new) or of
// operations that all find their marker (duplicate), at batch sizes 1, 100 and 1000, with the
// driver's server-side prepared statements (prepared) and with parameters interpolated by
// the client (interpolated). ops/s is the rate of one connection.
func BenchmarkEffectsApply(b *testing.B) {
	db := mytest.New(b)
	nop := func(_ context.Context, _ *sql.Tx, ops []int) ([]sink.Result, error) { return applied(len(ops)), nil }
	for _, mode := range []string{"prepared", "interpolated"} {
		cfg, err := mysql.ParseDSN(db.DSN)
		require.NoError(b, err)
		cfg.InterpolateParams = mode == "interpolated"
		conn, err := mysql.NewConnector(cfg)
		require.NoError(b, err)
		h := sql.OpenDB(conn)
		b.Cleanup(func() { _ = h.Close() })
		e, err := mysink.NewEffects(h, mysink.EffectConfig{Table: "markers_" + mode})
		require.NoError(b, err)
		require.NoError(b, e.Migrate(context.Background()))
		seq := 0
		batch := func(n int) []sink.Operation {
			ops := make([]sink.Operation, n)
			for i := range ops {
				ops[i] = sink.Operation{ID: fmt.Sprintf("op-%09d", seq), Payload: fmt.Appendf(nil, "a%d:%d", seq%10000, seq%97)}
				seq++
			}
			return ops
		}
		for _, size := range []int{1, 100, 1000} {
			for _, kind := range []string{"new", "duplicate"} {
				b.Run(fmt.Sprintf("%s/batch=%d/%s", mode, size, kind), func(b *testing.B) {
					ctx := context.Background()
					dup := batch(size)
					_, err := e.Apply(ctx, dup, nop)
					require.NoError(b, err)
					b.ReportAllocs()
					n := 0
					for b.Loop() {
						ops := dup
						if kind == "new" {
							b.StopTimer()
							ops = batch(size)
							b.StartTimer()
						}
						if _, err := e.Apply(ctx, ops, nop); err != nil {
							b.Fatal(err)
						}
						n += size
					}
					b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "ops/s")
				})
			}
		}
	}
}
