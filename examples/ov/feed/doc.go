// Package feed simulates the Dutch national public-transport feed, deterministically: the
// same [Config] (seed, start, duration, scale, shares) gives the same records, byte for byte.
// The OV example's feed command, its demo, its end-to-end tests and its benchmarks all draw
// their input from [Generate] or a [Generator].
//
// # The network
//
// Nine NDOV data owners run the network: ARR (Arriva), CXX (Connexxion), QBUZZ, GVB
// (Amsterdam), RET (Rotterdam), EBS, KEOLIS, HTM (The Hague) and NS (trains), each with lines
// of its modes (bus, tram, metro, train) in its regions. At scale 1 there are about 1,250
// lines, [DefaultStops] stops (a quay per direction) and [DefaultStations] stations, and a
// fleet of 5,000 vehicles in service at the morning peak; Config.Scale shrinks all of it
// for tests. The numbers are of the right order for the Netherlands; the map is invented.
//
// # The day
//
// [Activity] is the share of the fleet in service by time of day (Dutch winter time, [CET]):
// a night service, a morning peak from 7:30 to 8:45, a midday dip and an evening peak. Every
// 30 simulated seconds each operator starts trips until its share is in service; a trip runs
// a line end to end. Running times get congestion that grows with activity, noise, recovery
// from slack in the timetable, late departures and now and then an incident with a Pareto
// tail, so that 6 to 20% of predictions are more than 180 s late (more at the peak) and a
// few are late by half an hour or more.
//
// # Messages
//
// A vehicle in service reports its position every Config.PositionInterval; a trip reports
// its punctuality at every stop it reaches and updates the prediction for its next stop every
// Config.PredictionInterval (package event holds the format). Positions are keyed by vehicle
// id and predictions by trip id, so that one vehicle's or trip's messages share a partition;
// [Partition] is Kafka's default partitioner, and producers of this example place every
// record with it explicitly so that tests know each record's partition.
//
// Each record has a Kafka timestamp: the simulated instant it reaches the broker, its event
// time plus a transport delay. Delays stay within Config.MaxDisorder (shorter than the
// lateness), so that within a partition records are out of order but never late by disorder
// alone, except for:
//
//   - a share of predictions (Config.LateShare) delivered more than the lateness plus a window
//     after their event time: the late path;
//   - a share of records (Config.MalformedShare) replaced by a message the decoder rejects, cut
//     short, with a wrong type, a value out of range or an unknown version: the dead-letter
//     path.
//
// [Record.Intent] says which path a record was meant for; consumers decide from the bytes.
//
// # Files and pacing
//
// [Writer] and [Reader] store records as JSON lines (topic, key, timestamp, value) that the
// feed command replays with --from. [Pacer] plays records in real time, accelerated, or as
// fast as possible.
package feed
