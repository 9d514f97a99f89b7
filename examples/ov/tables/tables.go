package tables

import (
	"strings"

	"github.com/streamledger/streamledger/examples/ov/event"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/mysql"
	"github.com/streamledger/streamledger/sink/postgres"
	"github.com/streamledger/streamledger/window"
)

// Table names.
const (
	AggregatesTable = "delay_aggregates"
	VehiclesTable   = "vehicle_latest"
	TripsTable      = "trip_delay_latest"
	// OperatorAttr is the attribute (column) of delay_aggregates naming the operator.
	OperatorAttr = "operator"
)

// Dimensions of delay_aggregates.
const (
	DimLine     = "line"
	DimStation  = "station"
	DimOperator = "operator"
	DimNetwork  = "network"
	// NetworkID is the dimension_id of the network dimension.
	NetworkID = "NL"
)

// Quantile is the quantile delay_aggregates carries in p90_delay_s: by window.Linear, the
// spec's method, it equals PostgreSQL's percentile_cont(0.9) for every key of at most
// window.DefaultExactLimit delays.
const Quantile = 0.9

// Aggregates describes delay_aggregates.
func Aggregates() sink.AggregateSpec {
	return sink.AggregateSpec{
		Table: AggregatesTable,
		Columns: sink.AggregateColumns{
			WindowStart: "window_start", WindowEnd: "window_end", Dimension: "dimension", DimensionID: "dimension_id",
			Count: "event_count", Mean: "mean_delay_s", Quantile: "p90_delay_s", Max: "max_delay_s", Min: "min_delay_s",
			ComputedAt: "computed_at",
		},
		Attributes:     []string{OperatorAttr},
		Quantile:       Quantile,
		QuantileMethod: window.Linear,
	}
}

// Vehicles describes vehicle_latest.
func Vehicles() sink.StateSpec {
	return sink.StateSpec{
		Table:      VehiclesTable,
		Key:        []sink.Column{{Name: "vehicle_id", Type: sink.Text}},
		ObservedAt: sink.Column{Name: "observed_at", Type: sink.Timestamp},
		Values: []sink.Column{
			{Name: "trip_id", Type: sink.Text},
			{Name: "route_id", Type: sink.Text},
			{Name: "operator", Type: sink.Text},
			{Name: "lat", Type: sink.Float64},
			{Name: "lon", Type: sink.Float64},
			{Name: "bearing", Type: sink.Float64},
		},
		UpdatedAt: "updated_at",
	}
}

// Trips describes trip_delay_latest.
func Trips() sink.StateSpec {
	return sink.StateSpec{
		Table:      TripsTable,
		Key:        []sink.Column{{Name: "trip_id", Type: sink.Text}},
		ObservedAt: sink.Column{Name: "observed_at", Type: sink.Timestamp},
		Values: []sink.Column{
			{Name: "line", Type: sink.Text},
			{Name: "operator", Type: sink.Text},
			{Name: "stop", Type: sink.Text},
			{Name: "delay_s", Type: sink.Int32},
		},
		UpdatedAt: "updated_at",
	}
}

// Postgres returns the sink configuration for the OV tables in schema ("" means public).
func Postgres(schema string) postgres.Config {
	return postgres.Config{
		Schema:     schema,
		Aggregates: Aggregates(),
		States:     []sink.StateSpec{Vehicles(), Trips()},
	}
}

// Key is one window key: a dimension value, with the operator the row carries (empty for
// none).
type Key struct {
	Dimension string
	ID        string
	Operator  string
}

// KeysOf returns the four window keys of an arrival prediction. Their identifiers point into
// the decoded message's text; the windows keep [Retain]'s copies of them.
func KeysOf(p event.Prediction) [4]Key {
	return [4]Key{
		{Dimension: DimLine, ID: p.Line, Operator: p.Operator},
		{Dimension: DimStation, ID: p.Stop},
		{Dimension: DimOperator, ID: p.Operator, Operator: p.Operator},
		{Dimension: DimNetwork, ID: NetworkID},
	}
}

// Retain returns the window key an open window keeps (consumer.Config.RetainKey): k with
// its identifiers copied out of the message, both in one allocation. The decoder cuts every
// text field of a message out of one string, so a key holding a piece of it would keep the
// whole message text alive for as long as its window is open. Each (window, key) keeps a
// copy of its own, freed with its window: a table of copies shared by the windows would save
// the copies of a key open in several windows at once, but it would live as long as the
// consumer and every collection would scan it, with or without open windows. The network's
// constant identifier is never copied, and an operator key's identifier is its operator. It
// keeps no state and is safe for concurrent use.
func Retain(k Key) Key {
	switch k.ID {
	case NetworkID:
		return Key{Dimension: k.Dimension, ID: NetworkID, Operator: strings.Clone(k.Operator)}
	case k.Operator:
		op := strings.Clone(k.Operator)
		return Key{Dimension: k.Dimension, ID: op, Operator: op}
	}
	var b strings.Builder
	b.Grow(len(k.ID) + len(k.Operator))
	b.WriteString(k.ID)
	b.WriteString(k.Operator)
	both := b.String()
	return Key{Dimension: k.Dimension, ID: both[:len(k.ID)], Operator: both[len(k.ID):]}
}

// VehicleRow is the vehicle_latest row of a position.
func VehicleRow(p event.Position) sink.StateRow {
	var b VehicleRowBuf
	return b.Row(p)
}

// TripRow is the trip_delay_latest row of a prediction.
func TripRow(p event.Prediction) sink.StateRow {
	var b TripRowBuf
	return b.Row(p)
}

// VehicleRowBuf holds the key and values of one vehicle_latest row, so that a caller can
// allocate them together with the rest of its event: one allocation instead of two.
type VehicleRowBuf struct {
	key  [1]any
	vals [6]any
}

// Row fills b with the row of p and returns it; the row refers to b.
func (b *VehicleRowBuf) Row(p event.Position) sink.StateRow {
	b.key = [1]any{p.VehicleID}
	b.vals = [6]any{p.TripID, p.Line, p.Operator, p.Lat, p.Lon, p.Bearing}
	return sink.StateRow{Table: VehiclesTable, Key: b.key[:], ObservedAt: p.ObservedAt, Values: b.vals[:]}
}

// TripRowBuf holds the key and values of one trip_delay_latest row (see VehicleRowBuf).
type TripRowBuf struct {
	key  [1]any
	vals [4]any
}

// Row fills b with the row of p and returns it; the row refers to b.
func (b *TripRowBuf) Row(p event.Prediction) sink.StateRow {
	b.key = [1]any{p.TripID}
	b.vals = [4]any{p.Line, p.Operator, p.Stop, p.DelayS}
	return sink.StateRow{Table: TripsTable, Key: b.key[:], ObservedAt: p.ObservedAt, Values: b.vals[:]}
}

// MySQL returns the sink configuration for the OV tables in the database of the sink's
// *sql.DB.
func MySQL() mysql.Config {
	return mysql.Config{
		Aggregates: Aggregates(),
		States:     []sink.StateSpec{Vehicles(), Trips()},
	}
}
