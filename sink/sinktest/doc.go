// Package sinktest tests sinks: a conformance suite that every [sink.Sink] implementation
// runs, and [Memory], a recording in-memory implementation for the unit tests of packages
// that write through a sink.
//
// # Conformance
//
// [Run] runs the suite against the subjects a [Factory] builds, skipping what [Features]
// says the implementation lacks:
//
//	func TestConformance(t *testing.T) {
//		sinktest.Run(t, func(t *testing.T, s sinktest.Setup) sinktest.Subject {
//			return newMySink(t, s.Aggregates, s.States, s.Clock) // empty, released by t.Cleanup
//		}, sinktest.Features{ConcurrentWriters: true})
//	}
//
// It checks the guarantees of package sink: replace semantics (the seed's same window written
// twice is one row (10, 144.0, 300.0), a rewritten partial replaces), merging across
// partitions, duplicate and reordered batches, merge determinism (bit-identical rows
// whatever order the partitions wrote in, equal to [sink.Merge] in (topic, partition)
// order), concurrent writers against a single writer, progress that never goes back,
// readiness, attribute COALESCE, the last-write-wins guard (also under concurrent
// writers), and that invalid input writes nothing. Its tables are the OV example's
// ([DelayAggregates], [VehicleLatest]) and its clock is fixed, so every column is compared.
//
// # Memory
//
// [Memory] has the same semantics as the Postgres implementation (it passes the same
// suite), records every successful write ([Memory.Closes], [Memory.Upserts]) and fails the
// next writes on request ([Memory.FailNext]) without writing anything, so that a processor's
// tests can check that a failed write is never treated as durable.
package sinktest
