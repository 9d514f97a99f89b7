package window

import (
	"encoding/binary"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sampleStats returns Stats covering every encoding kind.
func sampleStats(t testing.TB) map[string]*Stats {
	t.Helper()
	r := rand.New(rand.NewPCG(3, 4))
	out := map[string]*Stats{
		"empty":       NewStats(),
		"one int":     statsOf(t, 42),
		"ints":        statsOf(t, -300, 0, 17, 17, 1e15),
		"floats":      statsOf(t, 0.5, -1.25, 3),
		"big int":     statsOf(t, 1<<53, -(1 << 53)),
		"beyond ints": statsOf(t, 1<<54, 1),
		"extremes":    statsOf(t, MaxValue, -MaxValue, 0),
	}
	full := NewStats()
	for range DefaultExactLimit {
		require.NoError(t, full.Add(r.Float64()))
	}
	out["exact full"] = full
	for _, n := range []int{DefaultExactLimit + 1, 1500, 50000} {
		s := NewStats()
		for range n {
			require.NoError(t, s.Add(r.NormFloat64()*100))
		}
		out["digest "+itoa(n)] = s
	}
	wide := NewStats()
	for i := range 2000 {
		v := MaxValue * (2*r.Float64() - 1)
		if i%3 == 0 {
			v = r.Float64()
		}
		require.NoError(t, wide.Add(v))
	}
	out["digest wide"] = wide
	return out
}

func itoa(n int) string { return string(binary.AppendVarint(nil, int64(n))) }

func TestStatsRoundTrip(t *testing.T) {
	for name, s := range sampleStats(t) {
		t.Run(name, func(t *testing.T) {
			b, err := s.MarshalBinary()
			require.NoError(t, err)
			var d Stats
			require.NoError(t, d.UnmarshalBinary(b))
			assert.Equal(t, s.Count(), d.Count())
			assert.Equal(t, math.Float64bits(s.Sum()), math.Float64bits(d.Sum()))
			assert.Equal(t, s.Exact(), d.Exact())
			if s.Count() > 0 {
				assert.Equal(t, s.Min(), d.Min())
				assert.Equal(t, s.Max(), d.Max())
				for _, q := range []float64{0, 0.01, 0.1, 0.5, 0.9, 0.99, 1} {
					assert.Equal(t, s.Quantile(Linear, q), d.Quantile(Linear, q), "q=%v", q)
				}
			}
			again, err := d.MarshalBinary()
			require.NoError(t, err)
			assert.Equal(t, b, again, "decode then encode must reproduce the bytes")
		})
	}
}

func TestStatsEncodingKinds(t *testing.T) {
	tests := []struct {
		name string
		s    *Stats
		kind byte
		size int
	}{
		{"empty", NewStats(), kindEmpty, 2},
		// version, kind, count, sum, first, two one-byte gaps
		{"ints", statsOf(t, 3, 1, 2), kindInts, 2 + 1 + 8 + 1 + 1 + 1},
		{"floats", statsOf(t, 0.5, 1), kindFloats, 2 + 1 + 8 + 16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.s.MarshalBinary()
			require.NoError(t, err)
			assert.Equal(t, byte(encodingVersion), b[0])
			assert.Equal(t, tt.kind, b[1])
			assert.Len(t, b, tt.size)
		})
	}
}

func TestStatsAppendBinary(t *testing.T) {
	s := statsOf(t, 1, 2, 3)
	want, err := s.MarshalBinary()
	require.NoError(t, err)
	got, err := s.AppendBinary([]byte("prefix"))
	require.NoError(t, err)
	assert.Equal(t, append([]byte("prefix"), want...), got)
}

// A Stats decoded into again and again holds what a fresh one decodes, grows its storage only
// when a larger exact Stats comes, and is left as it was by input it rejects.
func TestStatsUnmarshalReusesStorage(t *testing.T) {
	samples := sampleStats(t)
	names := slices.Sorted(maps.Keys(samples))
	full, err := samples["exact full"].MarshalBinary()
	require.NoError(t, err)
	bad := slices.Clone(full)
	bad[len(bad)-1] = 0xff // the last value negative: not ascending, found after the others
	var reused Stats
	for range 2 { // the second round finds storage for every exact sample
		for _, name := range names {
			b, err := samples[name].MarshalBinary()
			require.NoError(t, err)
			var fresh Stats
			require.NoError(t, fresh.UnmarshalBinary(b))
			require.NoError(t, reused.UnmarshalBinary(b), name)
			got, err := reused.MarshalBinary()
			require.NoError(t, err)
			assert.Equal(t, b, got, name)
			if fresh.Count() > 0 {
				assert.Equal(t, fresh.Quantile(Linear, 0.5), reused.Quantile(Linear, 0.5), name)
			}

			before := slices.Clone(reused.vals)
			require.Error(t, reused.UnmarshalBinary(bad))
			assert.Equal(t, before, reused.vals, "%s: a rejected input changed the values", name)
		}
	}
	allocs := testing.AllocsPerRun(100, func() { _ = reused.UnmarshalBinary(full) })
	assert.Zero(t, allocs, "decoding into storage that has room")
}

func TestStatsUnmarshalErrors(t *testing.T) {
	digest := NewStats()
	for i := range 1000 {
		require.NoError(t, digest.Add(float64(i)))
	}
	db, err := digest.MarshalBinary()
	require.NoError(t, err)
	ib, err := statsOf(t, 1, 2, 3).MarshalBinary()
	require.NoError(t, err)
	fb, err := statsOf(t, 0.5, 1.5).MarshalBinary()
	require.NoError(t, err)

	// digest layout: version, kind, 2-byte count, sum, min, max, then the small encoding at 28.
	mut := func(b []byte, f func([]byte) []byte) []byte {
		c := append([]byte(nil), b...)
		return f(c)
	}
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"nil", nil, ErrCorrupt},
		{"one byte", []byte{encodingVersion}, ErrCorrupt},
		{"version 0", []byte{0, kindEmpty}, ErrVersion},
		{"version 2", mut(db, func(b []byte) []byte { b[0] = 2; return b }), ErrVersion},
		{"unknown kind", []byte{encodingVersion, 9, 1}, ErrCorrupt},
		{"trailing after empty", []byte{encodingVersion, kindEmpty, 0}, ErrCorrupt},
		{"zero count", []byte{encodingVersion, kindInts, 0}, ErrCorrupt},
		{"non-minimal count", mut(ib, func(b []byte) []byte {
			return append(append(b[:2:2], 0x83, 0x00), b[3:]...)
		}), ErrCorrupt},
		{"truncated ints", ib[:len(ib)-1], ErrCorrupt},
		{"trailing ints", append(append([]byte(nil), ib...), 1), ErrCorrupt},
		{"truncated floats", fb[:len(fb)-1], ErrCorrupt},
		{"ints as floats", mut(fb, func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[11:], math.Float64bits(1))
			binary.LittleEndian.PutUint64(b[19:], math.Float64bits(2))
			return b
		}), ErrCorrupt},
		{"descending floats", mut(fb, func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[11:], math.Float64bits(3.5))
			return b
		}), ErrCorrupt},
		{"NaN value", mut(fb, func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[19:], math.Float64bits(math.NaN()))
			return b
		}), ErrCorrupt},
		{"NaN sum", mut(fb, func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[3:], math.Float64bits(math.NaN()))
			return b
		}), ErrCorrupt},
		{"exact too large", []byte{encodingVersion, kindInts, 0x81, 0x80, 0x04}, ErrCorrupt}, // MaxExactLimit+1
		{"truncated digest", db[:len(db)-1], ErrCorrupt},
		{"trailing digest", append(append([]byte(nil), db...), 0), ErrCorrupt},
		{"digest min above max", mut(db, func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[12:], math.Float64bits(1e9))
			return b
		}), ErrCorrupt},
		{"digest wrong compression", mut(db, func(b []byte) []byte {
			binary.BigEndian.PutUint64(b[28+4:], math.Float64bits(50))
			return b
		}), ErrCorrupt},
		{"digest wrong centroid count", mut(db, func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[28+12:], 1<<30)
			return b
		}), ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := statsOf(t, 5)
			err := s.UnmarshalBinary(tt.in)
			require.ErrorIs(t, err, tt.want)
			assert.Equal(t, int64(1), s.Count(), "a failed decode must leave the Stats unchanged")
			assert.Equal(t, float64(5), s.Max())
			_, cerr := readStats(tt.in, false, nil)
			assert.Equal(t, err, cerr, "the check must reject what UnmarshalBinary rejects, alike")
		})
	}
}

func TestCheckAllocatesNothing(t *testing.T) {
	for i, s := range sampleStats(t) {
		b, err := s.MarshalBinary()
		require.NoError(t, err)
		c, err := readStats(b, false, nil)
		n := c.count
		require.NoError(t, err, "sample %s", i)
		assert.Equal(t, s.Count(), n, "sample %s", i)
		if raceEnabled {
			continue // allocation counts are not kept under the race detector
		}
		allocs := testing.AllocsPerRun(10, func() { _, _ = readStats(b, false, nil) })
		assert.Zero(t, allocs, "sample %s: the check allocates", i)
	}
}

func FuzzStatsUnmarshal(f *testing.F) {
	for _, s := range sampleStats(f) {
		b, err := s.MarshalBinary()
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{encodingVersion, kindDigest, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		var s Stats
		c, cerr := readStats(data, false, nil)
		n := c.count
		if err := s.UnmarshalBinary(data); err != nil {
			require.Equal(t, err, cerr, "the check and UnmarshalBinary disagree")
			return
		}
		require.NoError(t, cerr)
		require.Equal(t, s.Count(), n)
		// Every accepted input is canonical and fully usable.
		b, err := s.MarshalBinary()
		require.NoError(t, err)
		require.Equal(t, data, b)
		for _, q := range []float64{0, 0.5, 0.9, 1} {
			v := s.Quantile(Linear, q)
			if s.Count() > 0 {
				require.False(t, math.IsNaN(v))
				require.GreaterOrEqual(t, v, s.Min())
				require.LessOrEqual(t, v, s.Max())
			}
		}
		m, err := Merge(&s, &s)
		if s.Count() > math.MaxInt64/2 {
			require.Error(t, err)
		} else {
			require.NoError(t, err)
			require.Equal(t, 2*s.Count(), m.Count())
			_, err = m.MarshalBinary()
			require.NoError(t, err)
		}
		// Decoded with a raised exact limit, a merge of exact parts within it stays exact.
		var l Stats
		require.NoError(t, l.SetExactLimit(MaxExactLimit))
		require.NoError(t, l.UnmarshalBinary(data))
		if l.Count() > 0 && l.Count() <= MaxExactLimit/2 {
			m, err := Merge(&l, &l)
			require.NoError(t, err)
			require.Equal(t, l.Exact(), m.Exact())
		}
		require.NoError(t, s.Add(1))
		_, err = s.MarshalBinary()
		require.NoError(t, err)
	})
}
