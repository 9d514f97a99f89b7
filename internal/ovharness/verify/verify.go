package verify

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/examples/ov/feed"
	"github.com/streamledger/streamledger/examples/ov/tables"
	"github.com/streamledger/streamledger/internal/ovharness/oracle"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/postgres"
)

// MeanTolerance is the largest difference allowed between a stored mean and the oracle's: the
// sum is accumulated in a different order.
const MeanTolerance = 1e-9

// Mismatch is one row (or dead letter) that differs from the oracle.
type Mismatch struct {
	// Table is the table, or "dlq" for dead letters.
	Table string
	// Key identifies the row.
	Key string
	// Problem says what differs: "missing", "extra", or the columns.
	Problem string
}

func (m Mismatch) String() string { return m.Table + " " + m.Key + ": " + m.Problem }

// Report is the outcome of a comparison.
type Report struct {
	// Rows counts the rows the oracle expects per table ("dlq": distinct dead letters).
	Rows map[string]int
	// Mismatches lists every difference.
	Mismatches []Mismatch
	// ClosedThrough is each prediction partition's progress as read from the sink.
	ClosedThrough map[oracle.Source]time.Time
	// LetterCopies counts dead letters found more than once (redelivered before a commit).
	LetterCopies int
	// AdmittedPredictions is the sum of event_count of the network dimension: every admitted
	// prediction of a written window counts once there.
	AdmittedPredictions int64
}

func (r *Report) add(table, key, format string, args ...any) {
	r.Mismatches = append(r.Mismatches, Mismatch{Table: table, Key: key, Problem: fmt.Sprintf(format, args...)})
}

// Tables compares the three tables in schema (read through pool) with r, given each partition's
// closed_through read from the sink's progress in the same schema.
func Tables(ctx context.Context, pool *pgxpool.Pool, schema string, r *oracle.Result) (*Report, error) {
	rep := &Report{Rows: map[string]int{}}
	closed, err := ClosedThrough(ctx, pool, schema, r)
	if err != nil {
		return nil, err
	}
	rep.ClosedThrough = closed
	want, err := r.Aggregates(closed)
	if err != nil {
		return nil, err
	}
	got, err := Aggregates(ctx, pool, schema)
	if err != nil {
		return nil, err
	}
	CompareAggregates(rep, want, got)
	vehicles, trips, err := States(ctx, pool, schema)
	if err != nil {
		return nil, err
	}
	CompareStates(rep, r, vehicles, trips)
	return rep, nil
}

// ClosedThrough reads the sink's progress of every prediction partition the oracle knows.
func ClosedThrough(ctx context.Context, pool *pgxpool.Pool, schema string, r *oracle.Result) (map[oracle.Source]time.Time, error) {
	var tps []sink.TopicPartition
	for src := range r.ClosableThrough() {
		tps = append(tps, sink.TopicPartition{Topic: src.Topic, Partition: src.Partition})
	}
	snk, err := postgres.New(pool, tables.Postgres(schema))
	if err != nil {
		return nil, err
	}
	progress, err := snk.ClosedThrough(ctx, tps...)
	if err != nil {
		return nil, fmt.Errorf("verify: reading progress: %w", err)
	}
	out := map[oracle.Source]time.Time{}
	for tp, t := range progress {
		out[oracle.Source{Topic: tp.Topic, Partition: tp.Partition}] = t
	}
	return out, nil
}

// CompareAggregates adds a mismatch for every missing, extra or different row.
func CompareAggregates(rep *Report, want, got map[oracle.AggKey]oracle.AggRow) {
	rep.Rows[tables.AggregatesTable] = len(want)
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			rep.add(tables.AggregatesTable, k.String(), "missing")
			continue
		}
		var diff []string
		if !g.WindowEnd.Equal(w.WindowEnd) {
			diff = append(diff, fmt.Sprintf("window_end %v, want %v", g.WindowEnd, w.WindowEnd))
		}
		if g.Operator != w.Operator {
			diff = append(diff, fmt.Sprintf("operator %q, want %q", g.Operator, w.Operator))
		}
		if g.Count != w.Count {
			diff = append(diff, fmt.Sprintf("event_count %d, want %d", g.Count, w.Count))
		}
		if g.Min != w.Min || g.Max != w.Max {
			diff = append(diff, fmt.Sprintf("min/max %v/%v, want %v/%v", g.Min, g.Max, w.Min, w.Max))
		}
		if math.Abs(g.Mean-w.Mean) > MeanTolerance || math.IsNaN(g.Mean) {
			diff = append(diff, fmt.Sprintf("mean_delay_s %v, want %v", g.Mean, w.Mean))
		}
		if g.P90 != w.P90 {
			diff = append(diff, fmt.Sprintf("p90_delay_s %v, want %v", g.P90, w.P90))
		}
		if len(diff) > 0 {
			rep.add(tables.AggregatesTable, k.String(), "%v", diff)
		}
	}
	for k, g := range got {
		if k.Dimension == tables.DimNetwork {
			rep.AdmittedPredictions += g.Count
		}
		if _, ok := want[k]; !ok {
			rep.add(tables.AggregatesTable, k.String(), "extra")
		}
	}
}

// CompareStates adds a mismatch for every missing, extra or different state row.
func CompareStates(rep *Report, r *oracle.Result, vehicles map[string]oracle.VehicleRow, trips map[string]oracle.TripRow) {
	rep.Rows[tables.VehiclesTable] = len(r.Vehicles)
	rep.Rows[tables.TripsTable] = len(r.Trips)
	compareMap(rep, tables.VehiclesTable, r.Vehicles, vehicles, func(a, b oracle.VehicleRow) bool {
		ok := a.ObservedAt.Equal(b.ObservedAt)
		a.ObservedAt = b.ObservedAt
		return ok && a == b
	})
	compareMap(rep, tables.TripsTable, r.Trips, trips, func(a, b oracle.TripRow) bool {
		ok := a.ObservedAt.Equal(b.ObservedAt)
		a.ObservedAt = b.ObservedAt
		return ok && a == b
	})
}

func compareMap[V any](rep *Report, table string, want, got map[string]V, equal func(a, b V) bool) {
	for id, w := range want {
		g, ok := got[id]
		switch {
		case !ok:
			rep.add(table, id, "missing")
		case !equal(w, g):
			rep.add(table, id, "%+v, want %+v", g, w)
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			rep.add(table, id, "extra")
		}
	}
}

func qualified(schema, table string) string {
	if schema == "" {
		return pgx.Identifier{table}.Sanitize()
	}
	return pgx.Identifier{schema, table}.Sanitize()
}

// Aggregates reads delay_aggregates; an empty schema means the pool's search_path.
func Aggregates(ctx context.Context, pool *pgxpool.Pool, schema string) (map[oracle.AggKey]oracle.AggRow, error) {
	rows, err := pool.Query(ctx, `SELECT window_start, window_end, dimension, dimension_id,
		coalesce(operator, ''), event_count, mean_delay_s, p90_delay_s, max_delay_s, min_delay_s FROM `+
		qualified(schema, tables.AggregatesTable))
	if err != nil {
		return nil, fmt.Errorf("verify: reading %s: %w", tables.AggregatesTable, err)
	}
	defer rows.Close()
	out := map[oracle.AggKey]oracle.AggRow{}
	for rows.Next() {
		var k oracle.AggKey
		var r oracle.AggRow
		if err := rows.Scan(&k.WindowStart, &r.WindowEnd, &k.Dimension, &k.DimensionID, &r.Operator, &r.Count, &r.Mean,
			&r.P90, &r.Max, &r.Min); err != nil {
			return nil, fmt.Errorf("verify: reading %s: %w", tables.AggregatesTable, err)
		}
		k.WindowStart = k.WindowStart.UTC()
		r.WindowEnd = r.WindowEnd.UTC()
		out[k] = r
	}
	return out, rows.Err()
}

// States reads vehicle_latest and trip_delay_latest; an empty schema means the pool's
// search_path.
func States(ctx context.Context, pool *pgxpool.Pool, schema string) (map[string]oracle.VehicleRow, map[string]oracle.TripRow, error) {
	vehicles := map[string]oracle.VehicleRow{}
	rows, err := pool.Query(ctx, `SELECT vehicle_id, trip_id, route_id, operator, lat, lon, bearing, observed_at FROM `+
		qualified(schema, tables.VehiclesTable))
	if err != nil {
		return nil, nil, fmt.Errorf("verify: reading %s: %w", tables.VehiclesTable, err)
	}
	for rows.Next() {
		var id string
		var v oracle.VehicleRow
		if err := rows.Scan(&id, &v.TripID, &v.RouteID, &v.Operator, &v.Lat, &v.Lon, &v.Bearing, &v.ObservedAt); err != nil {
			rows.Close()
			return nil, nil, fmt.Errorf("verify: reading %s: %w", tables.VehiclesTable, err)
		}
		vehicles[id] = v
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	trips := map[string]oracle.TripRow{}
	rows, err = pool.Query(ctx, `SELECT trip_id, line, operator, stop, delay_s, observed_at FROM `+qualified(schema, tables.TripsTable))
	if err != nil {
		return nil, nil, fmt.Errorf("verify: reading %s: %w", tables.TripsTable, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var v oracle.TripRow
		if err := rows.Scan(&id, &v.Line, &v.Operator, &v.Stop, &v.DelayS, &v.ObservedAt); err != nil {
			return nil, nil, fmt.Errorf("verify: reading %s: %w", tables.TripsTable, err)
		}
		trips[id] = v
	}
	return vehicles, trips, rows.Err()
}

// Letters compares the dead letters read from the dlq.<topic> topics with the oracle's: the
// distinct source offsets are exactly the oracle's dead letters, each a malformed record with
// its original key, value and error class, and each on the source's partition number.
// Redelivered copies must equal the first.
func Letters(rep *Report, r *oracle.Result, letters []dlq.DeadLetter, dlqPartitions []int32) {
	type key struct {
		src oracle.Source
		off int64
	}
	seen := map[key]dlq.DeadLetter{}
	for i, d := range letters {
		k := key{oracle.Source{Topic: d.Topic, Partition: d.Partition}, d.Offset}
		id := fmt.Sprintf("%s@%d", k.src, k.off)
		if dlqPartitions != nil && dlqPartitions[i] != d.Partition {
			rep.add("dlq", id, "on dlq partition %d, not its source partition", dlqPartitions[i])
		}
		if prev, ok := seen[k]; ok {
			rep.LetterCopies++
			if string(prev.Value) != string(d.Value) || string(prev.Key) != string(d.Key) {
				rep.add("dlq", id, "a redelivered copy differs from the first")
			}
			continue
		}
		seen[k] = d
	}
	rep.Rows["dlq"] = len(r.DeadLetters)
	want := map[key]bool{}
	for _, l := range r.DeadLetters {
		k := key{l.Source, l.Offset}
		want[k] = true
		id := fmt.Sprintf("%s@%d", l.Source, l.Offset)
		d, ok := seen[k]
		switch {
		case !ok:
			rep.add("dlq", id, "missing")
		case l.Record.Intent != feed.Malformed:
			rep.add("dlq", id, "the oracle rejects a record the feed did not mean to be malformed")
		case string(d.Value) != string(l.Record.Value) || string(d.Key) != string(l.Record.Key):
			rep.add("dlq", id, "key or value differs from the source record")
		case d.ErrorClass != dlq.ErrorClass(l.Err):
			rep.add("dlq", id, "class %q, want %q", d.ErrorClass, dlq.ErrorClass(l.Err))
		}
	}
	extra := make([]string, 0)
	for k := range seen {
		if !want[k] {
			extra = append(extra, fmt.Sprintf("%s@%d", k.src, k.off))
		}
	}
	sort.Strings(extra)
	for _, id := range extra {
		rep.add("dlq", id, "extra")
	}
}
