package fold

import (
	"fmt"
	"time"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/merge"
	"github.com/streamledger/streamledger/window"
)

// merger merges keys one after the other on one goroutine, reusing its storage from key to
// key: the decoded stats of a key's entries, and the encoded merged stats of the keys merged
// since its last reset, which the caller encodes into a folded row before the next reset.
// So a fold allocates per key what window.Merge makes and little else, however many keys a
// window holds.
type merger struct {
	// stats are a key's, in entry order, decoded into key after key; each keeps the spec's
	// exact limit.
	stats []*window.Stats
	enc   []byte // the merged stats of the keys since the last reset
}

// reset lets the merger reuse the storage of the encoded stats it returned.
func (m *merger) reset() { m.enc = m.enc[:0] }

// merge merges one key's entries (in source order) into its merged row and its folded
// entry: window.Merge of the stats, decoded with the spec's exact limit, in that order,
// summarized by the spec's quantile and method, and per attribute the first value. The
// entry's stats are valid until the next reset.
func (m *merger) merge(spec sink.AggregateSpec, w *pending, g []*Entry) (Row, Entry, error) {
	key := sink.Key{WindowStart: w.start, Dimension: g[0].Dimension, DimensionID: g[0].DimensionID}
	fail := func(what string, err error) (Row, Entry, error) {
		return Row{}, Entry{}, fmt.Errorf("%s %s/%s at %s: %w", what, key.Dimension, key.DimensionID, w.start.Format(time.RFC3339), err)
	}
	for i, e := range g {
		if err := m.decode(spec, i, e.Stats); err != nil {
			return fail("stats of", err)
		}
	}
	merged := m.stats[0]
	enc := g[0].Stats
	if len(g) > 1 {
		var err error
		if merged, err = window.Merge(m.stats[:len(g)]...); err != nil {
			return fail("fold: merge", err)
		}
		at := len(m.enc)
		if m.enc, err = merged.AppendBinary(m.enc); err != nil {
			return Row{}, Entry{}, err
		}
		enc = m.enc[at:len(m.enc):len(m.enc)]
	}
	sum, err := merge.Summarize(spec, merged)
	if err != nil {
		return fail("fold: merge", err)
	}
	var attrs []*string
	if n := len(spec.Attributes); n > 0 {
		attrs = make([]*string, n)
		for j := range attrs {
			for _, e := range g {
				if e.Attrs[j] != nil {
					attrs[j] = e.Attrs[j]
					break
				}
			}
		}
	}
	row := Row{Key: key, End: w.end, Attrs: attrs, Summary: sum}
	return row, Entry{Dimension: key.Dimension, DimensionID: key.DimensionID, Attrs: attrs, Stats: enc}, nil
}

// decode decodes b into the merger's i-th stats, as spec.Decode would into a new one.
func (m *merger) decode(spec sink.AggregateSpec, i int, b []byte) error {
	if i == len(m.stats) {
		st, err := merge.Decode(spec, b)
		if err != nil {
			return err
		}
		m.stats = append(m.stats, st)
		return nil
	}
	if err := m.stats[i].UnmarshalBinary(b); err != nil {
		return fmt.Errorf("%w: stats: %w", sink.ErrInvalid, err)
	}
	return nil
}
