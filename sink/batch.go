package sink

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/streamledger/streamledger/window"
)

// PrepareClose validates b against spec and returns the batch an implementation writes:
// times in UTC, partials collapsed to the last one per key, ordered by key (window start,
// dimension, dimension id). b is not modified. Errors wrap [ErrInvalid].
func PrepareClose(spec AggregateSpec, b CloseBatch) (CloseBatch, error) {
	if b.Source.Topic == "" {
		return CloseBatch{}, fmt.Errorf("%w: close batch without a source topic", ErrInvalid)
	}
	if b.Source.Partition < 0 {
		return CloseBatch{}, fmt.Errorf("%w: close batch for %s: partition must be >= 0", ErrInvalid, b.Source)
	}
	attrs := make(map[string]bool, len(spec.Attributes))
	for _, a := range spec.Attributes {
		attrs[a] = true
	}
	out := CloseBatch{Source: b.Source, ClosedThrough: b.ClosedThrough.UTC()}
	index := make(map[Key]int, len(b.Partials))
	out.Partials = make([]Partial, 0, len(b.Partials))
	for i, p := range b.Partials {
		p.WindowStart = p.WindowStart.UTC()
		p.WindowEnd = p.WindowEnd.UTC()
		if !p.WindowEnd.After(p.WindowStart) {
			return CloseBatch{}, fmt.Errorf("%w: partial %d of %s: window end %s must be after start %s",
				ErrInvalid, i, b.Source, p.WindowEnd.Format(time.RFC3339Nano), p.WindowStart.Format(time.RFC3339Nano))
		}
		if p.WindowEnd.After(out.ClosedThrough) {
			return CloseBatch{}, fmt.Errorf("%w: partial %d of %s ends at %s, after the batch's closed_through %s",
				ErrInvalid, i, b.Source, p.WindowEnd.Format(time.RFC3339Nano), out.ClosedThrough.Format(time.RFC3339Nano))
		}
		var st window.Stats
		if err := st.UnmarshalBinary(p.Stats); err != nil {
			return CloseBatch{}, fmt.Errorf("%w: partial %d of %s (%s/%s): stats: %w", ErrInvalid, i, b.Source, p.Dimension, p.DimensionID, err)
		}
		if st.Count() == 0 {
			return CloseBatch{}, fmt.Errorf("%w: partial %d of %s (%s/%s) holds no value; a closed window yields partials only for keys that saw one",
				ErrInvalid, i, b.Source, p.Dimension, p.DimensionID)
		}
		for name := range p.Attrs {
			if !attrs[name] {
				return CloseBatch{}, fmt.Errorf("%w: partial %d of %s carries attribute %q; the spec declares %q",
					ErrInvalid, i, b.Source, name, spec.Attributes)
			}
		}
		if j, ok := index[p.Key]; ok {
			out.Partials[j] = p
			continue
		}
		index[p.Key] = len(out.Partials)
		out.Partials = append(out.Partials, p)
	}
	slices.SortFunc(out.Partials, func(a, b Partial) int { return CompareKeys(a.Key, b.Key) })
	return out, nil
}

// CompareKeys orders keys by window start, dimension, then dimension id.
func CompareKeys(a, b Key) int {
	if c := a.WindowStart.Compare(b.WindowStart); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Dimension, b.Dimension); c != 0 {
		return c
	}
	return cmp.Compare(a.DimensionID, b.DimensionID)
}

// CompareSources orders partitions by topic, then partition: the order in which partials
// are merged.
func CompareSources(a, b TopicPartition) int {
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

// PrepareLatest validates rows against spec and collapses them to the newest row per key,
// as the seed's latest_by_key does: a later row in rows wins a tie. Times are converted to
// UTC. The rows keep the order of their keys' first appearance. Errors wrap [ErrInvalid].
func PrepareLatest(spec StateSpec, rows []StateRow) ([]StateRow, error) {
	out := make([]StateRow, 0, len(rows))
	index := make(map[any]int, len(rows))
	var buf []byte
	for i, r := range rows {
		if len(r.Key) != len(spec.Key) {
			return nil, fmt.Errorf("%w: row %d for %q has %d key values, the spec has %d key columns", ErrInvalid, i, spec.Table, len(r.Key), len(spec.Key))
		}
		if len(r.Values) != len(spec.Values) {
			return nil, fmt.Errorf("%w: row %d for %q has %d values, the spec has %d value columns", ErrInvalid, i, spec.Table, len(r.Values), len(spec.Values))
		}
		if r.ObservedAt.IsZero() {
			return nil, fmt.Errorf("%w: row %d for %q has no observed-at time", ErrInvalid, i, spec.Table)
		}
		r.ObservedAt = r.ObservedAt.UTC()
		var k any
		k, buf = DedupKey(buf[:0], r.Key)
		if j, ok := index[k]; ok {
			if !r.ObservedAt.Before(out[j].ObservedAt) {
				out[j] = r
			}
			continue
		}
		index[k] = len(out)
		out = append(out, r)
	}
	return out, nil
}

// DedupKey returns a comparable value that is equal for two key tuples exactly when their
// values have the same types and values (times compared as instants). buf is scratch space
// that is returned for reuse.
func DedupKey(buf []byte, key []any) (any, []byte) {
	if len(key) == 1 {
		switch v := key[0].(type) {
		case string, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, bool, float32, float64:
			return v, buf
		case time.Time:
			return v.UTC(), buf
		}
	}
	for _, v := range key {
		buf = appendKeyValue(buf, v)
	}
	return compositeKey(buf), buf
}

// compositeKey keeps encoded tuples apart from single string keys in the same map.
type compositeKey string

func appendKeyValue(buf []byte, v any) []byte {
	switch v := v.(type) {
	case string:
		buf = append(buf, 's')
		buf = strconv.AppendInt(buf, int64(len(v)), 10)
		buf = append(buf, ':')
		return append(buf, v...)
	case []byte:
		buf = append(buf, 'b')
		buf = strconv.AppendInt(buf, int64(len(v)), 10)
		buf = append(buf, ':')
		return append(buf, v...)
	case time.Time:
		buf = append(buf, 't')
		return v.UTC().AppendFormat(buf, time.RFC3339Nano)
	case nil:
		return append(buf, 'n')
	default:
		s := fmt.Sprintf("%T=%#v", v, v)
		buf = append(buf, 'x')
		buf = strconv.AppendInt(buf, int64(len(s)), 10)
		buf = append(buf, ':')
		return append(buf, s...)
	}
}
