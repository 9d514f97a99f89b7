package dlq_test

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/dlq"
)

var (
	failedAt = time.Date(2024, 3, 5, 7, 42, 13, 123456789, time.UTC)
	origTime = time.Date(2024, 3, 5, 7, 41, 59, 250_000_000, time.UTC)
)

func sampleLetter() dlq.DeadLetter {
	return dlq.DeadLetter{
		Record: dlq.Record{
			Topic:     "arrivals",
			Partition: 7,
			Offset:    123456789012,
			Timestamp: origTime,
			Key:       []byte("line-42"),
			Value:     []byte{0x00, 0xff, '{', 0xc3},
			Headers: []dlq.Header{
				{Key: "trace", Value: []byte("abc")},
				{Key: "empty", Value: []byte{}},
				{Key: "null", Value: nil},
				{Key: "trace", Value: []byte("dup")},
			},
		},
		ErrorClass:   "schema",
		ErrorMessage: "field \"delay\": expected a number, found \"soon\"",
		ConsumerID:   "ov-1",
		FailedAt:     failedAt,
		ReplayCount:  2,
	}
}

func header(hs []dlq.Header, key string) (string, bool) {
	for _, h := range hs {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}

func TestHeadersLayout(t *testing.T) {
	hs, err := sampleLetter().Headers()
	require.NoError(t, err)

	// Original headers come first, in order, nil and empty values kept apart.
	require.Equal(t, sampleLetter().Record.Headers, hs[:4])
	want := map[string]string{
		dlq.HeaderVersion:      "1",
		dlq.HeaderTopic:        "arrivals",
		dlq.HeaderPartition:    "7",
		dlq.HeaderOffset:       "123456789012",
		dlq.HeaderTimestamp:    "2024-03-05T07:41:59.25Z",
		dlq.HeaderErrorClass:   "schema",
		dlq.HeaderErrorMessage: `field "delay": expected a number, found "soon"`,
		dlq.HeaderConsumer:     "ov-1",
		dlq.HeaderFailedAt:     "2024-03-05T07:42:13.123456789Z",
		dlq.HeaderReplayCount:  "2",
	}
	got := map[string]string{}
	for _, h := range hs[4:] {
		require.True(t, strings.HasPrefix(h.Key, dlq.HeaderPrefix), h.Key)
		_, dup := got[h.Key]
		require.False(t, dup, "header %s written twice", h.Key)
		got[h.Key] = string(h.Value)
	}
	require.Equal(t, want, got)
}

func TestHeadersOmitUnknowns(t *testing.T) {
	d := sampleLetter()
	d.Timestamp, d.FailedAt, d.ReplayCount = time.Time{}, time.Time{}, 0
	hs, err := d.Headers()
	require.NoError(t, err)
	for _, k := range []string{dlq.HeaderTimestamp, dlq.HeaderFailedAt, dlq.HeaderReplayCount} {
		_, ok := header(hs, k)
		assert.False(t, ok, k)
	}
}

func TestHeadersRejectInvalidLetters(t *testing.T) {
	for name, mutate := range map[string]func(*dlq.DeadLetter){
		"empty topic":            func(d *dlq.DeadLetter) { d.Topic = "" },
		"negative partition":     func(d *dlq.DeadLetter) { d.Partition = -1 },
		"negative offset":        func(d *dlq.DeadLetter) { d.Offset = -1 },
		"negative replay count":  func(d *dlq.DeadLetter) { d.ReplayCount = -1 },
		"lost end at the offset": func(d *dlq.DeadLetter) { d.LostEnd = d.Offset },
		"negative lost end":      func(d *dlq.DeadLetter) { d.LostEnd = -1 },
		"timestamp after 9999":   func(d *dlq.DeadLetter) { d.Timestamp = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) },
		"failed before year 0":   func(d *dlq.DeadLetter) { d.FailedAt = time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC) },
	} {
		t.Run(name, func(t *testing.T) {
			d := sampleLetter()
			mutate(&d)
			_, err := d.Headers()
			require.ErrorIs(t, err, dlq.ErrInvalid)
		})
	}
}

func TestHeadersDropReservedOriginals(t *testing.T) {
	d := sampleLetter()
	d.Record.Headers = append(d.Record.Headers, dlq.Header{Key: dlq.HeaderTopic, Value: []byte("forged")})
	hs, err := d.Headers()
	require.NoError(t, err)
	back, err := dlq.Decode(d.Key, d.Value, hs)
	require.NoError(t, err)
	require.Equal(t, "arrivals", back.Topic)
}

func TestDecodeRoundTrip(t *testing.T) {
	for name, d := range map[string]dlq.DeadLetter{
		"full":    sampleLetter(),
		"minimal": {Record: dlq.Record{Topic: "t", Partition: 0, Offset: 0}},
		"null key and value, no headers": {
			Record:     dlq.Record{Topic: "a.b-c_d", Partition: 2147483647, Offset: 9223372036854775807},
			ErrorClass: "*strconv.NumError", FailedAt: failedAt,
		},
		"lost range": dlq.NewDeadLetter(dlq.Record{Topic: "t", Partition: 3, Offset: 40},
			&dlq.LostError{Topic: "t", Partition: 3, From: 40, To: 95, Reason: "fetch out of range"}, "c", failedAt),
	} {
		t.Run(name, func(t *testing.T) {
			hs, err := d.Headers()
			require.NoError(t, err)
			back, err := dlq.Decode(d.Key, d.Value, hs)
			require.NoError(t, err)
			require.Equal(t, d, back)
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	base, err := sampleLetter().Headers()
	require.NoError(t, err)
	set := func(key, value string) []dlq.Header {
		out := make([]dlq.Header, 0, len(base))
		for _, h := range base {
			if h.Key == key {
				h.Value = []byte(value)
			}
			out = append(out, h)
		}
		return out
	}
	drop := func(key string) []dlq.Header {
		out := make([]dlq.Header, 0, len(base))
		for _, h := range base {
			if h.Key != key {
				out = append(out, h)
			}
		}
		return out
	}
	tests := []struct {
		name    string
		headers []dlq.Header
		header  string // the header the error must name; "" for ErrNotDeadLetter
		msg     string
	}{
		{"no headers", nil, "", "no __streamledger.dlq.version header"},
		{"plain message", sampleLetter().Record.Headers, "", ""},
		{"no version", drop(dlq.HeaderVersion), "", ""},
		{"future version", set(dlq.HeaderVersion, "2"), dlq.HeaderVersion, `expected version 1, found "2"`},
		{"no topic", drop(dlq.HeaderTopic), dlq.HeaderTopic, "is missing"},
		{"empty topic", set(dlq.HeaderTopic, ""), dlq.HeaderTopic, "expected a topic name"},
		{"no partition", drop(dlq.HeaderPartition), dlq.HeaderPartition, "missing"},
		{"no offset", drop(dlq.HeaderOffset), dlq.HeaderOffset, "missing"},
		{"text partition", set(dlq.HeaderPartition, "seven"), dlq.HeaderPartition, `expected a partition in decimal, 0 to 2147483647, found "seven"`},
		{"negative partition", set(dlq.HeaderPartition, "-1"), dlq.HeaderPartition, "found \"-1\""},
		{"plus partition", set(dlq.HeaderPartition, "+1"), dlq.HeaderPartition, "found \"+1\""},
		{"leading zero", set(dlq.HeaderPartition, "07"), dlq.HeaderPartition, "found \"07\""},
		{"partition overflow", set(dlq.HeaderPartition, "2147483648"), dlq.HeaderPartition, "found \"2147483648\""},
		{"empty offset", set(dlq.HeaderOffset, ""), dlq.HeaderOffset, "expected an offset"},
		{"offset overflow", set(dlq.HeaderOffset, "9223372036854775808"), dlq.HeaderOffset, "expected an offset"},
		{"spaced offset", set(dlq.HeaderOffset, " 1"), dlq.HeaderOffset, "expected an offset"},
		{"bad timestamp", set(dlq.HeaderTimestamp, "yesterday"), dlq.HeaderTimestamp, "expected an RFC 3339 time, found \"yesterday\""},
		{"bad failed.at", set(dlq.HeaderFailedAt, "1709624533"), dlq.HeaderFailedAt, "expected an RFC 3339 time"},
		{"bad replay count", set(dlq.HeaderReplayCount, "x"), dlq.HeaderReplayCount, "expected a replay count"},
		{"duplicate topic", append(base, dlq.Header{Key: dlq.HeaderTopic, Value: []byte("other")}), dlq.HeaderTopic, "appears 2 times, expected once"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := dlq.Decode(nil, nil, tt.headers)
			require.Error(t, err)
			if tt.header == "" {
				require.ErrorIs(t, err, dlq.ErrNotDeadLetter)
			} else {
				require.ErrorIs(t, err, dlq.ErrBadHeader)
				require.Regexp(t, "^dlq: header "+regexp.QuoteMeta(tt.header)+"(:| is missing)", err.Error(), "the error names the header")
			}
			require.Contains(t, err.Error(), tt.msg)
		})
	}
}

func TestDecodeIgnoresUnknownReservedHeaders(t *testing.T) {
	hs, err := sampleLetter().Headers()
	require.NoError(t, err)
	hs = append(hs, dlq.Header{Key: dlq.HeaderPrefix + "from.the.future", Value: []byte("x")})
	back, err := dlq.Decode(sampleLetter().Key, sampleLetter().Value, hs)
	require.NoError(t, err)
	require.Equal(t, sampleLetter(), back)
}

func TestHeaderErrorTruncatesLongValues(t *testing.T) {
	long := make([]byte, 1000)
	for i := range long {
		long[i] = 'x'
	}
	hs, err := sampleLetter().Headers()
	require.NoError(t, err)
	for i := range hs {
		if hs[i].Key == dlq.HeaderOffset {
			hs[i].Value = long
		}
	}
	_, err = dlq.Decode(nil, nil, hs)
	require.ErrorIs(t, err, dlq.ErrBadHeader)
	require.ErrorContains(t, err, dlq.HeaderOffset)
	require.Less(t, len(err.Error()), 200)
	require.Contains(t, err.Error(), "...")
}

func TestReplayHeaders(t *testing.T) {
	d := sampleLetter()
	hs := d.ReplayHeaders()
	require.Equal(t, append(append([]dlq.Header(nil), d.Record.Headers...),
		dlq.Header{Key: dlq.HeaderReplayCount, Value: []byte("3")}), hs)

	// A replayed message that fails again is dead-lettered with its count.
	again := dlq.NewDeadLetter(dlq.Record{Topic: "arrivals", Headers: hs}, errors.New("still bad"), "ov-2", failedAt)
	require.Equal(t, 3, again.ReplayCount)
	require.Equal(t, d.Record.Headers, again.Record.Headers)
}

func FuzzDecode(f *testing.F) {
	hs, err := sampleLetter().Headers()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(flatten(hs))
	f.Add([]byte{})
	f.Add([]byte(dlq.HeaderVersion + "\x001\x00" + dlq.HeaderTopic + "\x00t\x00" + dlq.HeaderPartition + "\x00x\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		headers := unflatten(data)
		d, err := dlq.Decode([]byte("k"), []byte("v"), headers)
		if err != nil {
			if !errors.Is(err, dlq.ErrNotDeadLetter) && !errors.Is(err, dlq.ErrBadHeader) {
				t.Fatalf("unexpected error type %T: %v", err, err)
			}
			return
		}
		// Whatever decodes re-encodes, and decodes to the same letter.
		again, err := d.Headers()
		if err != nil {
			t.Fatalf("decoded letter does not encode: %v", err)
		}
		back, err := dlq.Decode([]byte("k"), []byte("v"), again)
		if err != nil {
			t.Fatalf("re-encoded letter does not decode: %v", err)
		}
		if !d.FailedAt.Equal(back.FailedAt) || !d.Timestamp.Equal(back.Timestamp) {
			t.Fatalf("times changed: %v %v -> %v %v", d.Timestamp, d.FailedAt, back.Timestamp, back.FailedAt)
		}
		back.FailedAt, back.Timestamp, d.FailedAt, d.Timestamp = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		require.Equal(t, d, back)
	})
}

// flatten writes headers as key NUL value NUL pairs, the fuzz corpus format.
func flatten(hs []dlq.Header) []byte {
	var b []byte
	for _, h := range hs {
		b = append(b, h.Key...)
		b = append(b, 0)
		b = append(b, h.Value...)
		b = append(b, 0)
	}
	return b
}

func unflatten(b []byte) []dlq.Header {
	var hs []dlq.Header
	var parts [][]byte
	start := 0
	for i, c := range b {
		if c == 0 {
			parts = append(parts, b[start:i])
			start = i + 1
		}
	}
	parts = append(parts, b[start:])
	for i := 0; i+1 < len(parts); i += 2 {
		hs = append(hs, dlq.Header{Key: string(parts[i]), Value: parts[i+1]})
	}
	return hs
}

func BenchmarkHeaders(b *testing.B) {
	d := sampleLetter()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Headers(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	d := sampleLetter()
	hs, err := d.Headers()
	require.NoError(b, err)
	size := 0
	for _, h := range hs {
		size += len(h.Key) + len(h.Value)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := dlq.Decode(d.Key, d.Value, hs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(size), "header-B/letter")
}

func TestNewDeadLetter(t *testing.T) {
	loc := time.FixedZone("CET", 3600)
	rec := dlq.Record{
		Topic: "positions", Partition: 3, Offset: 99, Timestamp: origTime.In(loc),
		Key: []byte("k"), Value: []byte("v"),
		Headers: []dlq.Header{
			{Key: "a", Value: []byte("1")},
			{Key: dlq.HeaderReplayCount, Value: []byte("4")},
			{Key: dlq.HeaderErrorClass, Value: []byte("stale")},
			{Key: "b", Value: nil},
		},
	}
	orig := append([]dlq.Header(nil), rec.Headers...)
	_, cause := strconv.Atoi("x")
	d := dlq.NewDeadLetter(rec, cause, "proc-1", failedAt.In(loc))

	require.Equal(t, dlq.DeadLetter{
		Record: dlq.Record{
			Topic: "positions", Partition: 3, Offset: 99, Timestamp: origTime,
			Key: []byte("k"), Value: []byte("v"),
			Headers: []dlq.Header{{Key: "a", Value: []byte("1")}, {Key: "b", Value: nil}},
		},
		ErrorClass:   "*strconv.NumError",
		ErrorMessage: `strconv.Atoi: parsing "x": invalid syntax`,
		ConsumerID:   "proc-1",
		FailedAt:     failedAt,
		ReplayCount:  4,
	}, d)
	require.Equal(t, orig, rec.Headers, "the caller's record is not modified")

	bad := dlq.NewDeadLetter(dlq.Record{Topic: "p", Headers: []dlq.Header{{Key: dlq.HeaderReplayCount, Value: []byte("many")}}}, nil, "", time.Time{})
	require.Zero(t, bad.ReplayCount)
	require.Empty(t, bad.Record.Headers)
	require.Empty(t, bad.ErrorClass)
	require.Empty(t, bad.ErrorMessage)
}

func TestRecordString(t *testing.T) {
	require.Equal(t, "arrivals/7@123456789012", sampleLetter().Record.String())
}

func TestLostLetter(t *testing.T) {
	cause := &dlq.LostError{Topic: "arrivals", Partition: 2, From: 100, To: 250, Reason: "committed offset below the log start"}
	d := dlq.NewDeadLetter(dlq.Record{Topic: "arrivals", Partition: 2, Offset: 100}, fmt.Errorf("consumer: %w", cause), "c1", failedAt)
	require.Equal(t, dlq.ClassLost, d.ErrorClass)
	require.Equal(t, int64(250), d.LostEnd)
	require.Contains(t, d.ErrorMessage, "arrivals/2 offsets [100, 250) (150 records) were deleted before they were read: committed offset below the log start")
	hs, err := d.Headers()
	require.NoError(t, err)
	v, ok := header(hs, dlq.HeaderLostEnd)
	require.True(t, ok)
	require.Equal(t, "250", v)
	_, ok = header(sampleLetterHeaders(t), dlq.HeaderLostEnd)
	require.False(t, ok, "a message's letter has no lost end")
	require.Equal(t, dlq.Skip, dlq.Policy{Classes: []string{dlq.ClassLost}}.Decide(d, 0), "a lost range is never replayed")
}

func sampleLetterHeaders(t *testing.T) []dlq.Header {
	t.Helper()
	hs, err := sampleLetter().Headers()
	require.NoError(t, err)
	return hs
}
