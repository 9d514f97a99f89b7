// Package sinkbench holds the workload and the timed loops the SQL sinks' benchmarks share,
// so that their figures compare: the same OV-like windows of partials, written the same ways.
package sinkbench
