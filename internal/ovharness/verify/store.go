package verify

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamledger/streamledger/examples/ov/tables"
	"github.com/streamledger/streamledger/internal/ovharness/oracle"
)

// Store reads the OV tables of one database whole, for the comparison with the oracle:
// every row, so that an extra one is found too.
type Store interface {
	Aggregates(ctx context.Context) (map[oracle.AggKey]oracle.AggRow, error)
	States(ctx context.Context) (map[string]oracle.VehicleRow, map[string]oracle.TripRow, error)
}

// Postgres reads the tables in schema through pool (see [Aggregates] and [States]).
func Postgres(pool *pgxpool.Pool, schema string) Store { return pgStore{pool, schema} }

type pgStore struct {
	pool   *pgxpool.Pool
	schema string
}

func (s pgStore) Aggregates(ctx context.Context) (map[oracle.AggKey]oracle.AggRow, error) {
	return Aggregates(ctx, s.pool, s.schema)
}

func (s pgStore) States(ctx context.Context) (map[string]oracle.VehicleRow, map[string]oracle.TripRow, error) {
	return States(ctx, s.pool, s.schema)
}

// MySQL reads the tables in the database of db (MySQL or MariaDB), whatever its DSN's
// parseTime and loc: times are read as text in UTC.
func MySQL(db *sql.DB) Store { return myStore{db} }

type myStore struct{ db *sql.DB }

// myTime selects a DATETIME(6) column as text.
func myTime(col string) string { return "DATE_FORMAT(`" + col + "`, '%Y-%m-%d %H:%i:%s.%f')" }

func parseMyTime(s string) (time.Time, error) {
	return time.ParseInLocation("2006-01-02 15:04:05.000000", s, time.UTC)
}

func (s myStore) Aggregates(ctx context.Context) (map[oracle.AggKey]oracle.AggRow, error) {
	out := map[oracle.AggKey]oracle.AggRow{}
	err := s.each(ctx, tables.AggregatesTable, "SELECT "+myTime("window_start")+", "+myTime("window_end")+", `dimension`, `dimension_id`, "+
		"COALESCE(`operator`, ''), `event_count`, `mean_delay_s`, `p90_delay_s`, `max_delay_s`, `min_delay_s` FROM `"+tables.AggregatesTable+"`",
		func(rows *sql.Rows) error {
			var k oracle.AggKey
			var r oracle.AggRow
			var start, end string
			if err := rows.Scan(&start, &end, &k.Dimension, &k.DimensionID, &r.Operator, &r.Count, &r.Mean, &r.P90, &r.Max, &r.Min); err != nil {
				return err
			}
			var err error
			if k.WindowStart, err = parseMyTime(start); err != nil {
				return err
			}
			if r.WindowEnd, err = parseMyTime(end); err != nil {
				return err
			}
			out[k] = r
			return nil
		})
	return out, err
}

func (s myStore) States(ctx context.Context) (map[string]oracle.VehicleRow, map[string]oracle.TripRow, error) {
	vehicles := map[string]oracle.VehicleRow{}
	err := s.each(ctx, tables.VehiclesTable, "SELECT `vehicle_id`, `trip_id`, `route_id`, `operator`, `lat`, `lon`, `bearing`, "+
		myTime("observed_at")+" FROM `"+tables.VehiclesTable+"`", func(rows *sql.Rows) error {
		var id, at string
		var v oracle.VehicleRow
		if err := rows.Scan(&id, &v.TripID, &v.RouteID, &v.Operator, &v.Lat, &v.Lon, &v.Bearing, &at); err != nil {
			return err
		}
		var err error
		v.ObservedAt, err = parseMyTime(at)
		vehicles[id] = v
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	trips := map[string]oracle.TripRow{}
	err = s.each(ctx, tables.TripsTable, "SELECT `trip_id`, `line`, `operator`, `stop`, `delay_s`, "+myTime("observed_at")+
		" FROM `"+tables.TripsTable+"`", func(rows *sql.Rows) error {
		var id, at string
		var v oracle.TripRow
		if err := rows.Scan(&id, &v.Line, &v.Operator, &v.Stop, &v.DelayS, &at); err != nil {
			return err
		}
		var err error
		v.ObservedAt, err = parseMyTime(at)
		trips[id] = v
		return err
	})
	return vehicles, trips, err
}

func (s myStore) each(ctx context.Context, table, q string, fn func(*sql.Rows) error) error {
	rows, err := s.db.QueryContext(ctx, q)
	if err != nil {
		return fmt.Errorf("verify: reading %s: %w", table, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return fmt.Errorf("verify: reading %s: %w", table, err)
		}
	}
	return rows.Err()
}
