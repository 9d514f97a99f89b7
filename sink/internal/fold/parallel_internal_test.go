package fold

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/specs"
)

// parallelBatches returns one close batch per source of one window: keys shared by every
// source, keys of one source, keys with enough values to merge as digests, attributes on
// some, so that a fold of them is split over several goroutines.
func parallelBatches(t *testing.T, sources, keys int) []sink.CloseBatch {
	r := rand.New(rand.NewPCG(7, 9))
	end := t0.Add(5 * time.Minute)
	out := make([]sink.CloseBatch, sources)
	for s := range out {
		b := sink.CloseBatch{Source: sink.TopicPartition{Topic: "a", Partition: int32(s)}, ClosedThrough: end}
		for k := range keys {
			if k%3 == 1 && k%sources != s {
				continue // a key of one source only
			}
			vals := make([]float64, 1+r.IntN(4))
			if k%97 == 0 {
				vals = make([]float64, 300) // past the exact limit: a digest
			}
			for i := range vals {
				vals[i] = float64(r.IntN(900) - 60)
			}
			p := sink.Partial{Key: sink.Key{WindowStart: t0, Dimension: "stop", DimensionID: fmt.Sprintf("s%06d", k)},
				WindowEnd: end, Stats: stats(t, vals...)}
			if k%5 == 0 {
				p.Attrs = map[string]string{"owner": fmt.Sprint("op", s)}
			}
			b.Partials = append(b.Partials, p)
		}
		r.Shuffle(len(b.Partials), func(i, j int) { b.Partials[i], b.Partials[j] = b.Partials[j], b.Partials[i] })
		out[s] = b
	}
	return out
}

func codec(tb testing.TB) *Codec {
	z, err := NewCodec()
	require.NoError(tb, err)
	return z
}

func planWith(t *testing.T, spec sink.AggregateSpec, batches []sink.CloseBatch, procs int) (*Plan, error) {
	t.Helper()
	progress := make([]Progress, len(batches))
	for i, b := range batches {
		progress[i] = Progress{Source: b.Source, ClosedThrough: t0}
	}
	return planAfter(t, spec, batches, procs, progress, nil)
}

// planAfter returns the plan of a call of batches on procs goroutines, after the stored
// progress and compact rows of topic a.
func planAfter(t *testing.T, spec sink.AggregateSpec, batches []sink.CloseBatch, procs int,
	progress []Progress, rows []Partials) (*Plan, error) {
	t.Helper()
	c, err := newCall(codec(t), spec, batches, procs)
	if err != nil {
		return nil, err
	}
	c.SetProgress(progress, []string{"a"})
	return c.Plan(rows, nil, nil)
}

// written is what a writer of p receives from p.Merged(size): the merged rows, chunk by
// chunk, and the folded rows.
type written struct {
	chunks [][]Row
	folded []FoldedBlob
}

func (w written) rows() []Row { return slices.Concat(w.chunks...) }

func merged(t *testing.T, p *Plan, size int) written {
	t.Helper()
	var w written
	folded, err := p.Merged(size, func(rows []Row, insert bool) error {
		assert.True(t, insert, "a first fold's rows are inserts")
		w.chunks = append(w.chunks, slices.Clone(rows))
		return nil
	})
	require.NoError(t, err)
	w.folded = folded
	return w
}

// Splitting a call's work over goroutines changes nothing it computes.
func TestParallelFoldEqualsOneGoroutine(t *testing.T) {
	spec := specs.WithDefaults(sink.AggregateSpec{Attributes: []string{"owner"}})
	batches := parallelBatches(t, 6, 3*parallelMin)
	p, err := planWith(t, spec, batches, 1)
	require.NoError(t, err)
	want := merged(t, p, 0)
	require.Len(t, want.folded, 1)
	require.Greater(t, len(want.rows()), 2*parallelMin, "the window is large enough to be split")
	for _, procs := range []int{2, 3, 4} {
		p, err := planWith(t, spec, batches, procs)
		require.NoError(t, err)
		assert.Equal(t, want, merged(t, p, 0), "procs=%d", procs)
	}
}

// A window merged in chunks gives the rows and the folded row of one merged whole, in
// chunks of about the size asked for, and merging again gives them again.
func TestMergedInChunksEqualsWhole(t *testing.T) {
	spec := specs.WithDefaults(sink.AggregateSpec{Attributes: []string{"owner"}})
	batches := parallelBatches(t, 6, 3*parallelMin)
	p, err := planWith(t, spec, batches, 2)
	require.NoError(t, err)
	whole := merged(t, p, 0)
	require.Len(t, whole.chunks, 1)
	keys := len(whole.rows())
	blob, err := codec(t).Decode(whole.folded[0].Blob, spec.Attributes)
	require.NoError(t, err)
	require.Len(t, blob.Entries, keys, "the folded row holds every merged key")
	assert.Equal(t, keys, whole.folded[0].Keys)
	for _, size := range []int{1000, 4096, 1 << 20} {
		got := merged(t, p, size)
		assert.Equal(t, whole.rows(), got.rows(), "size %d", size)
		assert.Equal(t, whole.folded, got.folded, "size %d", size)
		_, lists, err := p.call.sources(p.firsts[0].w, nil)
		require.NoError(t, err)
		longest := largest(lists)
		assert.Len(t, got.chunks, max(1, (longest+size-1)/size), "size %d", size)
		var info sink.WriteCloseInfo
		p.Report(&info)
		assert.Equal(t, keys, info.Merged, "size %d", size)
		assert.Equal(t, 1, info.Folded, "size %d", size)
	}
}

func TestSplitKeepsEveryKeyInOneRange(t *testing.T) {
	entries := func(ids ...int) []Entry {
		out := make([]Entry, len(ids))
		for i, id := range ids {
			out[i] = Entry{Dimension: "stop", DimensionID: fmt.Sprintf("s%06d", id)}
		}
		return out
	}
	long := make([]int, parallelMin)
	for i := range long {
		long[i] = 2 * i
	}
	lists := [][]Entry{entries(long...), entries(1, 2, 3, 2*parallelMin-2, 3*parallelMin), entries()}
	c := &Call{procs: 3}
	parts := c.split(lists)
	require.Len(t, parts, 3)
	var last *Entry
	for i := range lists {
		joined := []Entry{}
		for k := range parts {
			if k > 0 && len(parts[k][i]) > 0 && last != nil {
				assert.Negative(t, compareEntries(last, &parts[k][i][0]), "ranges in key order, list %d", i)
			}
			joined = append(joined, parts[k][i]...)
			if n := len(parts[k][i]); n > 0 {
				last = &parts[k][i][n-1]
			}
		}
		assert.Equal(t, lists[i], joined, "list %d: the ranges together are the list", i)
		last = nil
	}
	// A key is in the same range in every list.
	rangeOf := map[string]int{}
	for k := range parts {
		for i := range lists {
			for _, e := range parts[k][i] {
				if r, ok := rangeOf[e.DimensionID]; ok {
					assert.Equal(t, r, k, "key %s", e.DimensionID)
				}
				rangeOf[e.DimensionID] = k
			}
		}
	}
	assert.Len(t, (&Call{procs: 3}).split([][]Entry{entries(1, 2, 3)}), 1, "a small window stays whole")
	assert.Len(t, (&Call{procs: 1}).split(lists), 1, "one goroutine")
}

// The error of a call split over goroutines is the one a single goroutine finds first.
func TestParallelErrorsAreOneGoroutines(t *testing.T) {
	spec := specs.WithDefaults(sink.AggregateSpec{Attributes: []string{"owner"}})
	batches := parallelBatches(t, 4, 200)
	bad := func(i int) sink.Partial { p := batches[i].Partials[0]; p.Stats = []byte{0xff, 0x01}; return p }
	batches[1].Partials = append(batches[1].Partials, bad(1))
	batches[3].Partials = append(batches[3].Partials, bad(3))
	_, want := planWith(t, spec, batches, 1)
	require.Error(t, want)
	for _, procs := range []int{2, 4} {
		_, err := planWith(t, spec, batches, procs)
		assert.Equal(t, want.Error(), err.Error(), "procs=%d", procs)
	}
	each2 := func(procs int) error {
		return each(procs, 10, func(i int) error {
			if i == 3 || i == 7 {
				return fmt.Errorf("item %d", i)
			}
			return nil
		})
	}
	assert.EqualError(t, each2(1), "item 3")
	assert.EqualError(t, each2(4), "item 3", "the lowest failing index, as a loop stops at")
}
