// Package window aggregates the values of one source partition into tumbling
// event-time windows, per key, and serializes each closed (window, key) aggregate as a
// compact partial that merges deterministically with the partials of other partitions.
//
// # Windows
//
// Windows are [start, start+size) intervals aligned to the Unix epoch in UTC: start is a
// whole multiple of the size after (or before) 1970-01-01T00:00:00Z, whatever the time
// zone of the event time. [Bounds] computes them; the default size is [DefaultSize]
// (5 minutes).
//
// A [Windows] holds the open windows of ONE source partition, so that every decision
// depends only on that partition's own sequence. Keep one per partition:
//
//	w, err := window.New(window.Config[Key]{Size: 5 * time.Minute})
//	err = w.AddKeys(eventTime, latency, endpointKey, serviceKey, regionKey)
//	partials := w.Close(partitionWatermark) // windows with end <= watermark, in end order
//
// [Windows.Close] returns one [Partial] per key of every window whose end is at or before
// the watermark: windows in end order, keys in the order of their first Add. The same
// event sequence and the same Close calls therefore give the same partials, in the same
// order, with byte-identical serializations. After Close, an Add into a window whose end
// is at or before the highest watermark closed through fails with a [*LateError]
// (errors.Is [ErrLate]) and changes nothing.
//
// Revoking a partition drops its state: discard its Windows, or call [Windows.Reset] to
// reuse the value. The new owner replays the partition from the committed offset into a
// fresh Windows after calling Close with the partition's restored watermark (on an
// empty Windows, Close only records how far windows are closed), so windows already
// written are never rebuilt from a fragment and the others are rebuilt whole.
//
// # Aggregates
//
// A [Stats] holds count, sum, min and max exactly (mean is sum/count) and the values'
// distribution for quantiles, in one of two modes.
//
// Exact mode: up to the exact limit ([DefaultExactLimit], 256, unless
// [Config.ExactLimit] or [Stats.SetExactLimit] sets another) values are kept as they
// are, and [Stats.Quantile] is exact, by the [QuantileMethod] asked for: [Linear]
// (PostgreSQL's percentile_cont, the default) or [NearestRank] (percentile_disc). Both
// equal what PostgreSQL computes on the same values, bit for bit; a test of sink/postgres
// uses the server as the oracle. A key that sees a few to a few dozen values in a window
// gets exact quantiles for at most 2 KiB, and a merge of exact partials
// whose total is within the limit is exact too.
//
// Digest mode: the value past the exact limit turns the Stats into a t-digest with
// compression 100. A digest buffers up to 1024 values, then sorts them
// and merges them with its centroids in one pass that keeps every centroid within
// go-tdigest's own size bound, 4·N·q·(1-q)/δ. The centroids are held in go-tdigest v4's
// encoding and quantiles are estimated by go-tdigest's TDigest.Quantile, clamped to
// [Min, Max], for either method. The digest is built in sorted batches rather than by
// TDigest.Add per value, so that the values meet the centroids in one merge pass per batch
// instead of a search and an insertion per value.
//
// Error bound: in digest mode, at most 1% of the n values (at most one value when n is
// below 100) lie strictly between Quantile(m, q) and the exact q-quantile by m, for q from
// 0.001 to 0.999, for one Stats and for merges of up to 20 partials in two levels. Counting
// the values in between is the rank error that does not depend on how ties are ranked. A
// test enforces the bound over random windows of 1 to 100,000 values from continuous,
// heavy-tailed, bimodal and few-valued distributions, with exact limits from none to 1000.
//
// The exact limit is part of what every writer of the same aggregates agrees on, as the
// window size is: [Windows] built with a limit make partials that stay exact up to it, and
// [Merge] keeps a merge exact up to the largest limit of its parts, so the sink that merges
// partials sets the same limit on the parts it decodes. The limit is not serialized: bytes
// written with any limit decode the same whatever the reader's, an exact Stats of up to
// [MaxExactLimit] values as well as a digest of any count.
//
// # Determinism
//
// Nothing here draws random numbers: the merge pass is a pure function of its sorted
// input, so the same values added in the same order give bit-identical digests, and every
// go-tdigest TDigest is still created with a fixed-seed random source so that no library
// call could change that. [Merge] combines partials with count, min and max exact, sum
// accumulated in argument order, and one merge pass over all parts' values and centroids:
// the same parts in the same order give identical bytes, and quantiles do not depend on
// the order at all. A Stats decoded from bytes is indistinguishable from the one that
// wrote them (centroid means are stored exactly as the decoder rebuilds them), so merging
// decoded partials gives the same bytes as merging the originals.
//
// # Serialization
//
// [Stats.MarshalBinary] writes format version 1; integers are uvarints unless
// noted, floats are IEEE 754 bits, little-endian:
//
//	byte 0    version, 1
//	byte 1    kind: 0 empty, 1 exact floats, 2 exact integers, 3 digest
//	kind 0    nothing follows
//	kind 1    count (at most MaxExactLimit), sum (8 bytes), count values (8 bytes each)
//	          in ascending order
//	kind 2    count (at most MaxExactLimit), sum (8 bytes), first value (zigzag
//	          varint), count-1 gaps between consecutive values in ascending order; used
//	          when every value is an integer of magnitude at most 2^53, such as durations in
//	          whole seconds (one or two bytes per value)
//	kind 3    count, sum (8 bytes), min (8 bytes), max (8 bytes), then to the end the
//	          go-tdigest v4 small encoding of the centroids (big-endian int32 2, float64
//	          compression 100, int32 n, n float32 deltas between consecutive means,
//	          n uvarint weights), readable with go-tdigest's FromBytes
//
// The encoding is canonical: [Stats.UnmarshalBinary] accepts exactly what MarshalBinary
// writes, so decoding and re-encoding reproduces the input. Anything else (truncated or
// trailing bytes, a non-minimal varint, values out of order, a digest whose weights do
// not add up to the count, ...) is an error wrapping [ErrCorrupt], and an unknown version
// byte one wrapping [ErrVersion]; decoding never panics.
//
// # Values
//
// Values must be finite with magnitude at most [MaxValue] (1e38), because digest
// centroid means are stored as float32 deltas; anything else is rejected with
// [ErrInvalidValue]. Negative zero is stored as zero.
//
// # Concurrency and memory
//
// Neither Windows nor Stats is safe for concurrent use; partitions are independent,
// so each Windows can run on its own goroutine. The partials returned by Close are
// sealed (values sorted, digests folded): MarshalBinary and Merge then read them without
// changing them. Adding to a Windows does not allocate per event: value buffers come from
// large pointer-free chunks with outgrown buffers reused, and a closed window's key index is
// reused by a later window. An open window stores each key once, in first-Add order, beside a
// table of 4-byte positions.
package window
