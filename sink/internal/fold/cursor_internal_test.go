package fold

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/specs"
)

// storedThenFolded stores the first stored batches' partials as compact rows (the window is
// not complete while the other sources have closed nothing), encoded as a reader gets them,
// and returns the plan of a call with the other batches that completes the window. corrupt,
// if set, rewrites a stored row's blob.
func storedThenFolded(t *testing.T, spec sink.AggregateSpec, batches []sink.CloseBatch, stored int,
	corrupt func(i int, raw []byte) []byte) *Plan {
	t.Helper()
	z := codec(t)
	progress := func(closed int) []Progress {
		out := make([]Progress, len(batches))
		for i, b := range batches {
			out[i] = Progress{Source: b.Source, ClosedThrough: t0}
			if i < closed {
				out[i].ClosedThrough = b.ClosedThrough
			}
		}
		return out
	}
	p1, err := planAfter(t, spec, batches[:stored], 2, progress(0), nil)
	require.NoError(t, err)
	require.Len(t, p1.Partials, stored, "an incomplete window stores its partials")
	rows := make([]Partials, len(p1.Partials))
	for i, p := range p1.Partials {
		raw, err := encodeRaw(nil, spec.Attributes, Blob{Entries: p.Entries})
		require.NoError(t, err)
		if corrupt != nil {
			raw = corrupt(i, raw)
		}
		rows[i] = Partials{Start: p.Start, End: p.End, Source: p.Source, Blob: z.appendCompressed(nil, raw)}
	}
	p2, err := planAfter(t, spec, batches[stored:], 2, progress(stored), rows)
	require.NoError(t, err)
	return p2
}

// A first fold that reads stored compact rows a range of keys at a time writes what a fold of
// every partial in one call writes, at every chunk size.
func TestMergedFromStoredRowsEqualsOneCall(t *testing.T) {
	spec := specs.WithDefaults(sink.AggregateSpec{Attributes: []string{"owner"}})
	batches := parallelBatches(t, 6, 2*parallelMin)
	all, err := planWith(t, spec, batches, 2)
	require.NoError(t, err)
	want := merged(t, all, 0)
	require.Len(t, want.folded, 1)
	longest := 0 // the keys of the source with the most, whose keys cut the ranges
	for _, b := range batches {
		longest = max(longest, len(b.Partials))
	}
	for _, size := range []int{0, 1000, 4096, 1 << 20} {
		p := storedThenFolded(t, spec, batches, 4, nil)
		got := merged(t, p, size)
		assert.Equal(t, want.rows(), got.rows(), "size %d", size)
		assert.Equal(t, want.folded, got.folded, "size %d", size)
		if size > 0 {
			assert.Len(t, got.chunks, (longest+size-1)/size, "size %d: ranges of the longest source's keys", size)
		}
	}
}

// A stored row found corrupt after the fold has read part of it fails the fold with the
// row's source named, whatever was merged before.
func TestMergedFromACorruptStoredRow(t *testing.T) {
	spec := specs.WithDefaults(sink.AggregateSpec{Attributes: []string{"owner"}})
	batches := parallelBatches(t, 3, 2*parallelMin)
	for _, size := range []int{0, 1000} {
		p := storedThenFolded(t, spec, batches, 2, func(i int, raw []byte) []byte {
			if i == 1 {
				return append(raw, 0) // a byte after the last entry
			}
			return raw
		})
		chunks := 0
		_, err := p.Merged(size, func([]Row, bool) error { chunks++; return nil })
		require.ErrorIs(t, err, ErrCorrupt, "size %d", size)
		assert.ErrorContains(t, err, "compact partials of a[1]", "size %d", size)
		assert.ErrorContains(t, err, "bytes after the last entry", "size %d", size)
		if size == 0 {
			assert.Zero(t, chunks, "a window merged whole is read whole before its rows")
		} else {
			assert.Positive(t, chunks, "read as it goes: ranges before the end were written")
		}
	}
}

// A source whose stored row the call's batch partly replaces reads as the batch's entries
// over the stored ones, key by key, the stored attributes kept where the batch has none:
// what the whole decoded lists give.
func TestMergedReplacesStoredEntriesKeyByKey(t *testing.T) {
	spec := specs.WithDefaults(sink.AggregateSpec{Attributes: []string{"owner"}})
	batches := parallelBatches(t, 4, 2*parallelMin)
	again := batches[0] // source 0 again: a third of its keys, other values, no attributes
	again.Partials = nil
	for i, p := range batches[0].Partials {
		if i%3 == 0 {
			p.Stats, p.Attrs = stats(t, float64(i)), nil
			again.Partials = append(again.Partials, p)
		}
	}
	for _, size := range []int{0, 1000} {
		p := storedThenFolded(t, spec, append(batches[:2:2], again, batches[2], batches[3]), 2, nil)
		w := p.firsts[0].w
		require.NotEmpty(t, w.batch[again.Source], "the call carries source 0 again")
		_, lists, err := p.call.sources(w, nil)
		require.NoError(t, err)
		want, _, err := p.call.foldKeys(w, lists, nil, nil)
		require.NoError(t, err)
		assert.Equal(t, want, merged(t, p, size).rows(), "size %d", size)
	}
}
