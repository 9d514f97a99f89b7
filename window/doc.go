// Package window aggregates values into epoch-aligned tumbling windows, per key, for one
// source partition at a time, and serializes the per-(window, key) aggregates ([Stats])
// so that partials from many partitions can be merged deterministically.
//
// The full guarantees are documented on [Stats], [Merge] and [ExactQuantile].
package window
