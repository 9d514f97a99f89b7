package mysql_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/mysql"
	"github.com/streamledger/streamledger/window"
)

// exampleDB connects to MYSQL_DSN (or the local test server) and gives the example a database
// of its own, dropped by the returned cleanup. The sink's tables live in the database the
// handle's DSN names.
func exampleDB(ctx context.Context) (*sql.DB, func()) {
	dsn := os.Getenv("MYSQL_DSN")
	if dsn == "" {
		dsn = "root@tcp(127.0.0.1:3306)/test"
	}
	server, err := gomysql.ParseDSN(dsn)
	if err != nil {
		panic(err)
	}
	admin, err := sql.Open("mysql", server.FormatDSN())
	if err != nil {
		panic(err)
	}
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	name := "example_" + hex.EncodeToString(suffix[:])
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		panic(err)
	}
	cfg := server.Clone()
	cfg.DBName = name
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		panic(err)
	}
	return db, func() {
		_ = db.Close()
		_, _ = admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name)
		_ = admin.Close()
	}
}

func statsOf(values ...float64) []byte {
	s := window.NewStats()
	for _, v := range values {
		if err := s.Add(v); err != nil {
			panic(err)
		}
	}
	b, err := s.MarshalBinary()
	if err != nil {
		panic(err)
	}
	return b
}

// Delays per line, written by the two partitions of an arrivals topic (the OV example's
// delay_aggregates). The merged row appears once both registered partitions have closed past
// the window, and a redelivered close batch is harmless.
func ExampleSink_WriteClose() {
	ctx := context.Background()
	db, cleanup := exampleDB(ctx)
	defer cleanup()

	s, err := mysql.New(db, mysql.Config{
		Aggregates: sink.AggregateSpec{
			Table: "delay_aggregates",
			Columns: sink.AggregateColumns{Count: "event_count", Mean: "mean_delay_s", Quantile: "p90_delay_s",
				Max: "max_delay_s", Min: "min_delay_s"},
			Attributes: []string{"operator"},
		},
	})
	if err != nil {
		panic(err)
	}
	if err := s.Migrate(ctx); err != nil {
		panic(err)
	}
	p0 := sink.TopicPartition{Topic: "arrivals", Partition: 0}
	p1 := sink.TopicPartition{Topic: "arrivals", Partition: 1}
	// Register both partitions when they are assigned.
	for _, tp := range []sink.TopicPartition{p0, p1} {
		if err := s.WriteClose(ctx, sink.CloseBatch{Source: tp}); err != nil {
			panic(err)
		}
	}

	start, end := window.Bounds(time.Date(2026, 3, 2, 7, 3, 0, 0, time.UTC), 5*time.Minute)
	key := sink.Key{WindowStart: start, Dimension: "line", DimensionID: "GVB:17"}
	close0 := sink.CloseBatch{Source: p0, ClosedThrough: end, Partials: []sink.Partial{
		{Key: key, WindowEnd: end, Attrs: map[string]string{"operator": "GVB"}, Stats: statsOf(60, 90, 300, 60)},
	}}
	close1 := sink.CloseBatch{Source: p1, ClosedThrough: end, Partials: []sink.Partial{
		{Key: key, WindowEnd: end, Stats: statsOf(90, 300, 60, 90, 300, 90)},
	}}
	for _, b := range []sink.CloseBatch{close0, close0, close1, close1} { // each redelivered
		if err := s.WriteClose(ctx, b); err != nil {
			panic(err)
		}
		row, found, err := s.Aggregate(ctx, key)
		if err != nil {
			panic(err)
		}
		if !found {
			fmt.Println("no row: partition 1 has not closed the window")
			continue
		}
		fmt.Printf("count=%d mean=%.1f p90=%.1f operator=%s complete=%v\n", row.Count, row.Mean, row.Quantile, row.Attrs["operator"], row.Complete)
	}
	// Output:
	// no row: partition 1 has not closed the window
	// no row: partition 1 has not closed the window
	// count=10 mean=144.0 p90=300.0 operator=GVB complete=true
	// count=10 mean=144.0 p90=300.0 operator=GVB complete=true
}

// Last-write-wins state: an older observation never replaces a newer one.
func ExampleSink_UpsertLatest() {
	ctx := context.Background()
	db, cleanup := exampleDB(ctx)
	defer cleanup()

	s, err := mysql.New(db, mysql.Config{States: []sink.StateSpec{{
		Table:      "vehicle_latest",
		Key:        []sink.Column{{Name: "vehicle_id", Type: sink.Text}},
		ObservedAt: sink.Column{Name: "observed_at", Type: sink.Timestamp},
		Values:     []sink.Column{{Name: "delay_s", Type: sink.Float64}},
		UpdatedAt:  "updated_at",
	}}})
	if err != nil {
		panic(err)
	}
	if err := s.Migrate(ctx); err != nil {
		panic(err)
	}
	at := time.Date(2026, 3, 2, 7, 0, 0, 0, time.UTC)
	for _, r := range []sink.StateRow{
		{Table: "vehicle_latest", Key: []any{"bus-1"}, ObservedAt: at.Add(time.Minute), Values: []any{42.0}},
		{Table: "vehicle_latest", Key: []any{"bus-1"}, ObservedAt: at, Values: []any{7.0}}, // a redelivered older position
	} {
		if err := s.UpsertLatest(ctx, []sink.StateRow{r}); err != nil {
			panic(err)
		}
	}
	row, _, err := s.Latest(ctx, "vehicle_latest", "bus-1")
	if err != nil {
		panic(err)
	}
	fmt.Println(row.ObservedAt.Format("15:04"), row.Values[0])
	// Output: 07:01 42
}

// Balance credits applied once per operation ID, in one transaction: the redelivery of a
// credit is a duplicate, a different payload under the same ID is a conflict, and a credit to
// an account that does not exist is rejected without holding back the others.
func ExampleEffects_Apply() {
	ctx := context.Background()
	db, cleanup := exampleDB(ctx)
	defer cleanup()

	e, err := mysql.NewEffects(db, mysql.EffectConfig{
		Horizon:         30 * 24 * time.Hour,
		SourceRetention: 30 * 24 * time.Hour,
	})
	if err != nil {
		panic(err)
	}
	if err := e.Migrate(ctx); err != nil {
		panic(err)
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE account (id VARCHAR(64) PRIMARY KEY, balance BIGINT NOT NULL)"); err != nil {
		panic(err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO account VALUES ('a7', 100)"); err != nil {
		panic(err)
	}
	type credit struct {
		id, account string
		amount      int64
	}
	credits := []credit{{"credit-42", "a7", 10}, {"credit-42", "a7", 10}, {"credit-42", "a7", 99}, {"credit-43", "nobody", 5}}
	ops := make([]sink.Operation, len(credits))
	for i, c := range credits {
		ops[i] = sink.Operation{ID: c.id, Payload: fmt.Appendf(nil, "%s:%+d", c.account, c.amount)}
	}
	// The effect credits each accepted operation and reports those whose account does not
	// exist: a nonzero credit changes the balance, so a row it found counts as affected.
	effect := func(ctx context.Context, tx *sql.Tx, at []int) ([]sink.Result, error) {
		res := make([]sink.Result, len(at))
		for k, i := range at {
			r, err := tx.ExecContext(ctx, "UPDATE account SET balance = balance + ? WHERE id = ?", credits[i].amount, credits[i].account)
			if err != nil {
				return nil, err
			}
			n, err := r.RowsAffected()
			if err != nil {
				return nil, err
			}
			res[k] = sink.Result{Outcome: sink.Applied}
			if n == 0 {
				res[k] = sink.Result{Outcome: sink.Rejected, Err: fmt.Errorf("%w: no account %q", sink.ErrNoEffect, credits[i].account)}
			}
		}
		return res, nil
	}
	res, err := e.Apply(ctx, ops, effect)
	if err != nil {
		panic(err)
	}
	for i, r := range res {
		fmt.Println(credits[i].id, r.Outcome, r.Err != nil)
	}
	var balance int64
	if err := db.QueryRowContext(ctx, "SELECT balance FROM account").Scan(&balance); err != nil {
		panic(err)
	}
	fmt.Println("balance:", balance)
	// Output:
	// credit-42 applied false
	// credit-42 duplicate false
	// credit-42 conflict true
	// credit-43 rejected true
	// balance: 110
}
