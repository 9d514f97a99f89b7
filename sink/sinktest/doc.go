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
// It checks the guarantees of package sink: the same finalized window written twice is one row
// (10, 144.0, 300.0), not two; registered partitions hold windows back, empty ones and topics
// that never wrote a partial do not, and only complete windows have merged rows; a partition's
// rewritten partial replaces its keys before the window completes; merging across partitions;
// duplicate and reordered batches; merge determinism (rows equal to
// window.Merge of the partials in (topic, partition) order whatever order the
// partitions wrote in, digests included); a partition registered after its window was written
// is merged in, a replay of a written window is ignored, and past the horizon a window's rows
// are final; a call's batches are written together or not at all; concurrent writers against a
// single writer; progress that never goes back; readiness; attribute COALESCE; the
// last-write-wins guard (also under concurrent writers); that times are stored and compared at
// [sink.Precision]; that invalid input writes nothing; a [sink.GatedWindowWriter] commits
// only what its gate lets through; and that a [sink.TableDescriber] declares the tables it was built
// with. Its tables name every column and its clock is fixed, so every column is compared.
//
// # Memory
//
// [Memory] has the same semantics as the SQL implementations (all of them plan their close
// writes with the same planner, and it passes the same suite), records every successful
// write ([Memory.Closes], [Memory.Upserts]) and fails the next calls on request
// ([Memory.FailNext]) without writing anything, so that a consumer's tests can check that a
// failed write is never treated as durable.
package sinktest
