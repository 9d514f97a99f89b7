package window

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2024, 5, 1, 8, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func newWindows(t testing.TB, size time.Duration) *Windows[string] {
	t.Helper()
	w, err := New(Config[string]{Size: size})
	require.NoError(t, err)
	return w
}

type event struct {
	at  time.Duration
	key string
	v   float64
}

type closed struct {
	start, end time.Duration
	key        string
	count      int64
	sum        float64
}

func summarize(ps []Partial[string]) []closed {
	out := make([]closed, len(ps))
	for i, p := range ps {
		out[i] = closed{p.Start.Sub(t0), p.End.Sub(t0), p.Key, p.Stats.Count(), p.Stats.Sum()}
	}
	return out
}

func TestConfig(t *testing.T) {
	w, err := New(Config[string]{})
	require.NoError(t, err)
	assert.Equal(t, DefaultSize, w.Size())
	_, err = New(Config[string]{Size: -time.Second})
	require.ErrorIs(t, err, ErrConfig)
}

// Retain sees a key once per window it enters, and the window keeps what Retain returned.
func TestRetainOncePerWindowAndKey(t *testing.T) {
	var seen []string
	w, err := New(Config[string]{Size: time.Minute, Retain: func(k string) string {
		seen = append(seen, k)
		return strings.Clone(k)
	}})
	require.NoError(t, err)
	text := "line-1station-9"
	line, station := text[:6], text[6:]
	for i := range 3 {
		require.NoError(t, w.AddKeys(t0.Add(time.Duration(i)*10*time.Second), 1, line, station))
	}
	require.NoError(t, w.Add(t0.Add(time.Minute), line, 2)) // the next window
	assert.Equal(t, []string{"line-1", "station-9", "line-1"}, seen)

	ps := w.Close(t0.Add(2 * time.Minute))
	require.Len(t, ps, 3)
	lo := uintptr(unsafe.Pointer(unsafe.StringData(text)))
	for _, p := range ps {
		at := uintptr(unsafe.Pointer(unsafe.StringData(p.Key)))
		assert.False(t, at >= lo && at < lo+uintptr(len(text)), "%q is the retained copy", p.Key)
	}
	assert.Equal(t, int64(3), ps[0].Stats.Count())
}

func TestWindowsCloseOrder(t *testing.T) {
	const m = time.Minute
	tests := []struct {
		name   string
		events []event
		wm     time.Duration
		want   []closed
		open   int
	}{
		{
			name:   "nothing closes before the end",
			events: []event{{1 * m, "a", 1}},
			wm:     5*m - time.Nanosecond,
			want:   []closed{},
			open:   1,
		},
		{
			name:   "end equal to watermark closes",
			events: []event{{1 * m, "a", 1}, {2 * m, "a", 2}},
			wm:     5 * m,
			want:   []closed{{0, 5 * m, "a", 2, 3}},
		},
		{
			name: "windows in end order, keys in first-add order",
			events: []event{
				{11 * m, "z", 1}, {1 * m, "b", 1}, {6 * m, "y", 5}, {2 * m, "a", 2},
				{3 * m, "b", 3}, {7 * m, "x", 1}, {16 * m, "late-open", 1},
			},
			wm: 15 * m,
			want: []closed{
				{0, 5 * m, "b", 2, 4}, {0, 5 * m, "a", 1, 2},
				{5 * m, 10 * m, "y", 1, 5}, {5 * m, 10 * m, "x", 1, 1},
				{10 * m, 15 * m, "z", 1, 1},
			},
			open: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWindows(t, 5*m)
			for _, e := range tt.events {
				require.NoError(t, w.Add(at(e.at), e.key, e.v))
			}
			got := summarize(w.Close(at(tt.wm)))
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.open, w.OpenWindows())
		})
	}
}

func TestWindowsLate(t *testing.T) {
	const m = time.Minute
	w := newWindows(t, 5*m)
	require.NoError(t, w.Add(at(1*m), "a", 1))
	require.NoError(t, w.Add(at(6*m), "a", 1))
	require.Len(t, w.Close(at(7*m)), 1)

	tests := []struct {
		name    string
		at      time.Duration
		wantErr bool
	}{
		{"closed window", 4 * m, true},
		{"start of closed window", 0, true},
		{"long ago", -100 * m, true},
		{"open window", 5 * m, false},
		{"future window", 20 * m, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := w.OpenKeys()
			err := w.Add(at(tt.at), "late", 1)
			errKeys := w.AddKeys(at(tt.at), 1, "late2", "late3")
			if !tt.wantErr {
				require.NoError(t, err)
				require.NoError(t, errKeys)
				return
			}
			require.ErrorIs(t, err, ErrLate)
			require.ErrorIs(t, errKeys, ErrLate)
			var le *LateError
			require.True(t, errors.As(err, &le))
			assert.Equal(t, at(7*m), le.ClosedThrough)
			_, end := Bounds(at(tt.at), 5*m)
			assert.Equal(t, end, le.WindowEnd)
			assert.Equal(t, at(tt.at), le.EventTime)
			assert.Equal(t, before, w.OpenKeys(), "a late event must change nothing")
		})
	}

	// A window whose end equals the closed-through watermark is late too.
	w2 := newWindows(t, 5*m)
	w2.Close(at(5 * m))
	require.ErrorIs(t, w2.Add(at(4*m), "a", 1), ErrLate)
	require.NoError(t, w2.Add(at(5*m), "a", 1))
	assert.Empty(t, w2.Close(at(9*m)), "nothing ends by 9m")
	assert.Equal(t, 1, w2.OpenKeys())
}

func TestWindowsWatermarkNeverGoesBack(t *testing.T) {
	w := newWindows(t, time.Minute)
	_, ok := w.ClosedThrough()
	assert.False(t, ok)
	w.Close(at(10 * time.Minute))
	w.Close(at(2 * time.Minute))
	ct, ok := w.ClosedThrough()
	require.True(t, ok)
	assert.Equal(t, at(10*time.Minute), ct)
	require.ErrorIs(t, w.Add(at(5*time.Minute), "a", 1), ErrLate)
	// The zero time is below every window: it closes nothing.
	w3 := newWindows(t, time.Minute)
	require.NoError(t, w3.Add(at(0), "a", 1))
	assert.Empty(t, w3.Close(time.Time{}))
	require.NoError(t, w3.Add(at(0), "a", 1))
}

func TestWindowsInvalid(t *testing.T) {
	w := newWindows(t, time.Minute)
	require.ErrorIs(t, w.Add(at(0), "a", math.NaN()), ErrInvalidValue)
	require.ErrorIs(t, w.AddKeys(at(0), math.Inf(1), "a", "b"), ErrInvalidValue)
	require.ErrorIs(t, w.Add(time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC), "a", 1), ErrOutOfRange)
	require.ErrorIs(t, w.Add(time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC), "a", 1), ErrOutOfRange)
	assert.Zero(t, w.OpenKeys())
}

func TestWindowsAddKeys(t *testing.T) {
	w := newWindows(t, time.Minute)
	require.NoError(t, w.AddKeys(at(0), 2, "line:1", "stop:9", "op:ARR"))
	require.NoError(t, w.AddKeys(at(time.Second), 4, "line:1", "op:ARR"))
	require.NoError(t, w.AddKeys(at(2*time.Second), 1))
	got := summarize(w.Close(at(time.Minute)))
	assert.Equal(t, []closed{
		{0, time.Minute, "line:1", 2, 6},
		{0, time.Minute, "stop:9", 1, 2},
		{0, time.Minute, "op:ARR", 2, 6},
	}, got)
}

// TestWindowsRevoke shows the revoke contract: dropping (or resetting) a partition's
// Windows drops its state, and a replay from the committed offset into a fresh Windows,
// restored to the same closed-through watermark, rebuilds the same partials.
func TestWindowsRevoke(t *testing.T) {
	const m = time.Minute
	events := []event{{1 * m, "a", 1}, {2 * m, "b", 2}, {6 * m, "a", 3}, {7 * m, "b", 4}, {12 * m, "a", 5}}
	feed := func(w *Windows[string], evs []event) {
		for _, e := range evs {
			require.NoError(t, w.Add(at(e.at), e.key, e.v))
		}
	}
	w := newWindows(t, 5*m)
	feed(w, events[:2])
	first := summarize(w.Close(at(5 * m))) // written to the sink with closed_through = 5m
	feed(w, events[2:4])
	require.Equal(t, 2, w.OpenKeys())

	// Revoked: the state after the durable prefix is dropped.
	w.Reset()
	assert.Zero(t, w.OpenKeys())
	assert.Zero(t, w.OpenWindows())
	_, ok := w.ClosedThrough()
	assert.False(t, ok)

	// New owner: restore closed_through, replay from the committed offset (events[2:]).
	owner := newWindows(t, 5*m)
	assert.Empty(t, owner.Close(at(5*m)))
	require.ErrorIs(t, owner.Add(at(1*m), "a", 1), ErrLate, "windows already written are never rebuilt")
	feed(owner, events[2:])
	second := summarize(owner.Close(at(15 * m)))

	// Reference: one uninterrupted run.
	ref := newWindows(t, 5*m)
	feed(ref, events)
	all := summarize(ref.Close(at(15 * m)))
	assert.Equal(t, all, append(first, second...))
}

// TestWindowsDeterministic feeds the same partition sequence twice and requires
// byte-identical partials, in the same order.
func TestWindowsDeterministic(t *testing.T) {
	run := func() []string {
		w, err := New(Config[int]{Size: time.Minute})
		require.NoError(t, err)
		var out []string
		seed := uint64(1)
		for i := range 60000 {
			seed = seed*6364136223846793005 + 1442695040888963407
			key := int(seed>>33) % 40
			if i%5 == 0 {
				key = 1000 + int(seed>>40)%2 // two hot keys reach digest mode
			}
			v := float64(seed>>50) / 16
			require.NoError(t, w.AddKeys(at(time.Duration(i)*10*time.Millisecond), v, key, -key))
			if i%3000 == 0 {
				for _, p := range w.Close(at(time.Duration(i) * 10 * time.Millisecond)) {
					b, err := p.Stats.MarshalBinary()
					require.NoError(t, err)
					out = append(out, fmt.Sprintf("%v %v %x", p.End, p.Key, b))
				}
			}
		}
		return out
	}
	a, b := run(), run()
	require.NotEmpty(t, a)
	assert.Equal(t, a, b)
	digests := 0
	for _, s := range a {
		if len(s) > 1000 {
			digests++
		}
	}
	assert.Positive(t, digests, "the test must cover digest mode")
}

// TestWindowsMatchesStats checks a Windows against plain Stats fed the same values, over
// many windows and keys of very different sizes, so that shared buffers, reused maps and
// sealing on Close cannot leak values between keys or windows.
func TestWindowsMatchesStats(t *testing.T) {
	const size = time.Minute
	w := newWindows(t, size)
	type wk struct {
		end time.Duration
		key string
	}
	ref := map[wk]*Stats{}
	seed := uint64(9)
	next := func() uint64 {
		seed = seed*6364136223846793005 + 1442695040888963407
		return seed >> 33
	}
	var got []Partial[string]
	for i := range 40000 {
		d := time.Duration(i) * 7 * time.Millisecond // about 8,500 events per window
		keys := []string{fmt.Sprintf("k%d", next()%300), "hot", fmt.Sprintf("w%d", next()%3)}
		v := float64(next()%5000) / 8
		require.NoError(t, w.AddKeys(at(d), v, keys...))
		_, end := Bounds(at(d), size)
		for _, k := range keys {
			key := wk{end.Sub(t0), k}
			if ref[key] == nil {
				ref[key] = NewStats()
			}
			require.NoError(t, ref[key].Add(v))
		}
		if i%1000 == 999 {
			got = append(got, w.Close(at(d-10*time.Second))...)
		}
	}
	got = append(got, w.Close(at(time.Hour))...)
	require.Len(t, got, len(ref))
	for _, p := range got {
		want := ref[wk{p.End.Sub(t0), p.Key}]
		require.NotNil(t, want, "unexpected partial %v %v", p.End, p.Key)
		wb, err := want.MarshalBinary()
		require.NoError(t, err)
		gb, err := p.Stats.MarshalBinary()
		require.NoError(t, err)
		require.Equal(t, wb, gb, "partial %v %v", p.End, p.Key)
	}
}

// Bytes estimates the heap the open windows hold within a third of what the runtime measures,
// for few and for many values per key; once its window is closed it counts the key index kept
// for the next window while one is open, and drops to zero once none is.
func TestWindowsBytesEstimate(t *testing.T) {
	for _, tc := range []struct{ values, keys int }{{1, 40_000}, {20, 40_000}, {400, 4_000}} {
		t.Run(fmt.Sprint(tc.values, " values"), func(t *testing.T) {
			values, keys := tc.values, tc.keys
			w, err := New[int64](Config[int64]{})
			require.NoError(t, err)
			before := heapLive()
			for i := range values {
				for k := range int64(keys) {
					require.NoError(t, w.Add(t0.Add(time.Duration(i)*time.Millisecond), k, float64(i%7)))
				}
			}
			grown := heapLive() - before
			est := w.Bytes()
			assert.InDelta(t, 1, float64(est)/float64(grown), 1.0/3, "estimate %d, measured %d", est, grown)
			require.NoError(t, w.Add(t0.Add(2*time.Hour), 0, 1)) // a later window stays open
			w.Close(t0.Add(time.Hour))
			// What is kept besides the index is not counted: the value chunk in use (64 KiB)
			// and the digests' scratch space.
			kept := heapLive() - before
			assert.InDelta(t, float64(kept), float64(w.Bytes()), max(float64(kept)/3, 4*slabChunk*8),
				"estimate %d, measured %d", w.Bytes(), kept)
			w.Close(t0.Add(3 * time.Hour))
			assert.Zero(t, w.Bytes(), "nothing open: the index is not kept either")
			runtime.KeepAlive(w)
		})
	}
}

func heapLive() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
