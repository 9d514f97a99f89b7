// Package tables describes the OV example's tables in the terms of package sink, and maps
// decoded events to their window keys and state rows. It is the one place that knows the
// seed's column names.
//
// # Tables
//
//   - delay_aggregates, the seed's merged table, keyed by (window_start, dimension,
//     dimension_id), with exactly the seed's columns: window_start, window_end, dimension,
//     dimension_id, operator, event_count, mean_delay_s, p90_delay_s, max_delay_s,
//     min_delay_s, computed_at ([Aggregates]), written when a window is complete; the sink
//     adds delay_aggregates_partials, delay_aggregates_folded, delay_aggregates_topics and
//     the readiness view delay_aggregates_status;
//   - vehicle_latest, keyed by vehicle_id: trip_id, route_id (the line), operator, lat, lon,
//     bearing, observed_at, updated_at ([Vehicles]);
//   - trip_delay_latest, keyed by trip_id: line, operator, stop, delay_s, observed_at,
//     updated_at ([Trips]).
//
// Both state tables keep the seed's guard: a row replaces the stored one only when its
// observed_at is not older.
//
// # Dimensions
//
// Each arrival prediction adds its delay to four window keys ([KeysOf]): its line, its stop
// (the seed's "station"), its operator and the network ([NetworkID], one id for the whole
// country). The operator column of delay_aggregates holds the line's operator for a line,
// the operator itself for an operator, and stays NULL for a station (served by several) and
// for the network.
package tables
