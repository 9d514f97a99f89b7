// Package fold is the database-agnostic core of a windowed sink's close writes: given the
// close batches of one call and the stored rows the call touches, it says which windows
// become complete, which merged rows to write, which compact partial rows to store, replace
// or delete, which folded rows to write and how progress changes. An implementation
// (Postgres, the in-memory sink of package sinktest) only reads and writes rows, inside
// one lock that serializes the close writes of one aggregates table.
//
// # Completeness
//
// A partition holds windows back when it is registered (it has a progress row), its topic
// contributes (some partition of the topic wrote a partial to the table) and it is not
// marked empty with an unknown closed_through. A window is complete once every holding
// partition's closed_through, as the call leaves it, is at or after its end; a holding
// partition that has closed nothing holds every window back. Progress never goes back, so a
// complete window stays complete until a new partition registers.
//
// # Fold
//
// The call that completes a window computes every key's merged row once: window.Merge of the
// key's partials in (topic, partition) order, stored and in-memory alike, where a source's
// in-memory partial of a key replaces its stored one, each decoded with the spec's exact limit.
// The numbers equal merge.Partials with the spec of those partials in
// that order, the quantile by the spec's method. The call's own partials of the window are not
// stored. Attributes take the first value in that order; the implementation keeps the stored
// value where none has one (COALESCE).
//
// A call decodes its batches, and merges the keys of a large window in ranges of keys, on up
// to four goroutines (never more than GOMAXPROCS); what it computes, and the error it returns,
// are what one goroutine computes. The merged rows of a window folded for the first time are
// made as the implementation writes them ([Plan.Merged]), a range of keys at a time, and the
// folded row is encoded as they are made: a window of many keys is never held whole beside
// the partials it is merged from. Stored compact rows that the implementation reads as
// blobs ([Partials].Blob) are decoded where the plan needs them: those of a window folded
// for the first time as [Plan.Merged] reaches each range of its keys, so that a fold holds
// one range of the window's stored entries decoded, not all of them beside the rows. A row
// found corrupt there fails Merged once the ranges before the corrupt part were passed on,
// which the implementation's transaction then discards.
//
// A window that is not complete keeps its partials compactly: one row per (window, source)
// holding every key's entry in one [Blob]. A later batch of the same window and source
// replaces the keys it carries and keeps the others. Blobs are written and read by a
// [Codec], which an implementation makes once and shares between its calls; every Codec
// writes the same bytes for the same blob.
//
// # Folded rows and the horizon
//
// A fold also writes one folded row per window: every key's merged stats and the sources
// merged into them, and deletes the window's compact rows. A partition that registers later
// (a partition added to a topic, or a topic that starts contributing) and writes partials
// of a folded window is merged in at once: Merge(folded stats, its partials in order). The
// merged rows it touches are rewritten and the folded row with them. A partial from a
// source already folded into its window is a replay of a final window and is dropped.
//
// Folded rows are pruned once they were last written more than the horizon ago, by the writers'
// clock (horizon.Resolve, [Pruner]): a Kafka record is appended before its window folds, so a horizon
// at least as long as the source's retention outlives every redelivery of it, also for windows
// of historical data folded today. A window whose merged rows are stored but whose folded row
// is gone is final: partials of it from any source are dropped and its merged rows stay as they
// are. A partition added later, or a replay of a window older than the horizon, therefore
// changes no stored row; the horizon must cover the sources' retention for replays to be
// harmless.
package fold
