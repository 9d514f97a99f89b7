// Package keyindex maps the keys of state rows (sink.StateRow.Key) to positions, under one
// identity of a key ([Dedup]): two keys are the same key exactly when their values have the
// same types and values, times compared as instants at sink.Precision, the precision at which
// every sink stores them. The consumer's state buffer and the sinks' collapse of a batch to
// the newest row per key use it, so that both agree on which rows share a key. A key of one
// string is indexed by the string itself, which hashes without the dynamic type an any key
// carries; every other key by its dedup value.
package keyindex
