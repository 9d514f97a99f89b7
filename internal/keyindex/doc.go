// Package keyindex maps the keys of state rows (sink.StateRow.Key) to positions, under the
// identity the caller's dedup function gives a key (sink.DedupKey). A key of one string is
// indexed by the string itself, which hashes without the dynamic type an any key carries;
// every other key by its dedup value. Two keys find the same position exactly when dedup
// makes them equal.
package keyindex
