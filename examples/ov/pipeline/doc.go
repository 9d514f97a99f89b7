// Package pipeline wires the OV processor: the decoders of the two topics, the sink of the
// seed's tables (on Postgres, or MySQL and MariaDB: [Database]), the dead-letter producer and
// the consumer runtime. The run and demo
// commands and the end-to-end tests all build their processor here, so that what the tests
// check is what users run.
//
// # What a message does
//
// A vehicle position updates vehicle_latest and moves its partition's watermark; it has no
// window, so it is never late. An arrival prediction adds its delay (in seconds, positive when
// late) to its 5-minute window under its line, stop, operator and the network, and updates
// trip_delay_latest; if its window has already closed in its partition it is late and does
// nothing. A message that fails to decode or validate (package event) goes to dlq.<topic> with
// its error class. Offsets are committed by the runtime's ledger, never past a message that is
// not yet durable.
package pipeline
