package event_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/examples/ov/event"
)

var (
	brokerTS = time.Date(2026, 3, 10, 6, 31, 20, 0, time.UTC)
	obsTS    = time.Date(2026, 3, 10, 6, 31, 12, 345000000, time.UTC)
)

const (
	validPosition   = `{"version":1,"vehicle_id":"GVB:2045","trip_id":"GVB:20260310:17:1043","line":"GVB:17","operator":"GVB","lat":52.37,"lon":4.89,"bearing":87.5,"observed_at":"2026-03-10T06:31:12.345Z"}`
	validPrediction = `{"version":1,"trip_id":"GVB:20260310:17:1043","vehicle_id":"GVB:2045","line":"GVB:17","operator":"GVB","stop":"NL:Q:57002160","delay_s":123,"observed_at":"2026-03-10T06:31:12.345Z"}`
)

func wantPosition() event.Position {
	return event.Position{VehicleID: "GVB:2045", TripID: "GVB:20260310:17:1043", Line: "GVB:17", Operator: "GVB",
		Lat: 52.37, Lon: 4.89, Bearing: 87.5, ObservedAt: obsTS}
}

func wantPrediction() event.Prediction {
	return event.Prediction{TripID: "GVB:20260310:17:1043", VehicleID: "GVB:2045", Line: "GVB:17", Operator: "GVB",
		Stop: "NL:Q:57002160", DelayS: 123, ObservedAt: obsTS}
}

func newDecoder(t testing.TB) *event.Decoder {
	d, err := event.NewDecoder(event.Config{})
	require.NoError(t, err)
	return d
}

// edit replaces old by new in s exactly once, so that a broken fixture fails loudly.
func edit(t testing.TB, s, old, new string) string {
	require.Equal(t, 1, strings.Count(s, old), "fixture %q must hold %q once", s, old)
	return strings.Replace(s, old, new, 1)
}

func TestDecodePosition(t *testing.T) {
	d := newDecoder(t)
	p := validPosition
	cases := []struct {
		name  string
		in    string
		noTS  bool // decode without a broker timestamp
		want  func(*event.Position)
		class string // empty: accepted
		field string
	}{
		{name: "canonical", in: p},
		{name: "no broker timestamp", in: p, noTS: true},
		{name: "whitespace", in: " \n{ \"version\" : 1 ,\t" + p[len(`{"version":1,`):] + "\r\n"},
		{name: "escapes", in: edit(t, p, `"GVB:2045"`, `"GVB:\u0032045"`)},
		{name: "escaped key", in: edit(t, p, `"vehicle_id"`, `"vehicle\u005fid"`)},
		{name: "time with offset", in: edit(t, p, `"2026-03-10T06:31:12.345Z"`, `"2026-03-10T07:31:12.345+01:00"`)},
		{name: "time without fraction", in: edit(t, p, `"2026-03-10T06:31:12.345Z"`, `"2026-03-10T06:31:12Z"`),
			want: func(p *event.Position) { p.ObservedAt = obsTS.Truncate(time.Second) }},
		{name: "fields reordered", in: `{"lat":52.37,"lon":4.89,"bearing":87.5,"observed_at":"2026-03-10T06:31:12.345Z","operator":"GVB","line":"GVB:17","trip_id":"GVB:20260310:17:1043","vehicle_id":"GVB:2045","version":1}`},
		{name: "bearing bounds", in: edit(t, p, `87.5`, `360`), want: func(p *event.Position) { p.Bearing = 360 }},
		{name: "negative zero bearing", in: edit(t, p, `87.5`, `-0`), want: func(p *event.Position) { p.Bearing = 0 }},
		{name: "exponent", in: edit(t, p, `52.37`, `5237e-2`)},
		{name: "box corner", in: edit(t, edit(t, p, `52.37`, `50.75`), `4.89`, `7.22`),
			want: func(p *event.Position) { p.Lat, p.Lon = 50.75, 7.22 }},
		{name: "oldest event time", in: edit(t, p, `"2026-03-10T06:31:12.345Z"`, `"2026-03-09T06:31:20Z"`),
			want: func(p *event.Position) { p.ObservedAt = brokerTS.Add(-24 * time.Hour) }},

		{name: "empty", in: ``, class: event.ClassSyntax},
		{name: "truncated", in: p[:len(p)/2], class: event.ClassSyntax},
		{name: "closing brace cut", in: p[:len(p)-1], class: event.ClassSyntax},
		{name: "array", in: `[` + p + `]`, class: event.ClassSyntax},
		{name: "string", in: `"hello"`, class: event.ClassSyntax},
		{name: "trailing data", in: p + ` x`, class: event.ClassSyntax},
		{name: "two objects", in: p + p, class: event.ClassSyntax},
		{name: "NaN literal", in: edit(t, p, `52.37`, `NaN`), class: event.ClassSyntax},
		{name: "leading plus", in: edit(t, p, `52.37`, `+52.37`), class: event.ClassSyntax},
		{name: "control character", in: edit(t, p, `GVB:2045`, "GVB:\x012045"), class: event.ClassSyntax},
		{name: "truncated and wrong version", in: edit(t, p, `"version":1`, `"version":2`)[:40], class: event.ClassSyntax},

		{name: "version 2", in: edit(t, p, `"version":1`, `"version":2`), class: event.ClassVersion},
		{name: "version as string", in: edit(t, p, `"version":1`, `"version":"1"`), class: event.ClassVersion},
		{name: "version 1.0", in: edit(t, p, `"version":1`, `"version":1.0`), class: event.ClassVersion},
		{name: "version 2 with a new field", in: edit(t, p, `"version":1`, `"version":2,"speed":12`), class: event.ClassVersion},
		{name: "version 2 after a bad field", in: edit(t, p, `"version":1,`, ``)[:len(p)-len(`"version":1,`)-1] + `,"version":2}`,
			class: event.ClassVersion},
		{name: "no version", in: edit(t, p, `"version":1,`, ``), class: event.ClassMissing, field: "version"},

		{name: "missing trip", in: edit(t, p, `"trip_id":"GVB:20260310:17:1043",`, ``), class: event.ClassMissing, field: "trip_id"},
		{name: "null lat", in: edit(t, p, `52.37`, `null`), class: event.ClassMissing, field: "lat"},
		{name: "empty object", in: `{}`, class: event.ClassMissing, field: "version"},
		{name: "lat as string", in: edit(t, p, `52.37`, `"52.37"`), class: event.ClassType, field: "lat"},
		{name: "vehicle as number", in: edit(t, p, `"GVB:2045"`, `2045`), class: event.ClassType, field: "vehicle_id"},
		{name: "bearing as object", in: edit(t, p, `87.5`, `{"deg":87.5}`), class: event.ClassType, field: "bearing"},
		{name: "time as number", in: edit(t, p, `"2026-03-10T06:31:12.345Z"`, `1773124272`), class: event.ClassType, field: "observed_at"},
		{name: "unknown field", in: edit(t, p, `"bearing":87.5`, `"bearing":87.5,"speed":12`), class: event.ClassUnknownField, field: "speed"},
		{name: "field of the other schema", in: edit(t, p, `"bearing":87.5`, `"bearing":87.5,"stop":"x"`), class: event.ClassUnknownField, field: "stop"},
		{name: "field name case", in: edit(t, p, `"lat"`, `"Lat"`), class: event.ClassUnknownField, field: "Lat"},
		{name: "duplicate field", in: edit(t, p, `"lat":52.37`, `"lat":52.37,"lat":52.38`), class: event.ClassDuplicateField, field: "lat"},
		{name: "empty id", in: edit(t, p, `"GVB:2045"`, `""`), class: event.ClassFormat, field: "vehicle_id"},
		{name: "id with space", in: edit(t, p, `"GVB:2045"`, `"GVB 2045"`), class: event.ClassFormat, field: "vehicle_id"},
		{name: "id too long", in: edit(t, p, `"GVB:2045"`, `"`+strings.Repeat("x", 65)+`"`), class: event.ClassFormat, field: "vehicle_id"},
		{name: "non-ASCII id", in: edit(t, p, `"GVB:17"`, `"GVB:17é"`), class: event.ClassFormat, field: "line"},
		{name: "operator lower case", in: edit(t, p, `"operator":"GVB"`, `"operator":"gvb"`), class: event.ClassFormat, field: "operator"},
		{name: "time not RFC 3339", in: edit(t, p, `"2026-03-10T06:31:12.345Z"`, `"10/03/2026 06:31"`), class: event.ClassFormat, field: "observed_at"},
		{name: "time without zone", in: edit(t, p, `"2026-03-10T06:31:12.345Z"`, `"2026-03-10T06:31:12.345"`), class: event.ClassFormat, field: "observed_at"},

		{name: "lat south of the box", in: edit(t, p, `52.37`, `48.1`), class: event.ClassRangeCoordinates, field: "lat"},
		{name: "lon east of the box", in: edit(t, p, `4.89`, `7.3`), class: event.ClassRangeCoordinates, field: "lon"},
		{name: "lat overflows", in: edit(t, p, `52.37`, `1e999`), class: event.ClassRangeCoordinates, field: "lat"},
		{name: "bearing negative", in: edit(t, p, `87.5`, `-1`), class: event.ClassRangeBearing, field: "bearing"},
		{name: "bearing over 360", in: edit(t, p, `87.5`, `400`), class: event.ClassRangeBearing, field: "bearing"},
		{name: "event time too old", in: edit(t, p, `"2026-03-10T06:31:12.345Z"`, `"2026-03-09T06:31:19Z"`), class: event.ClassRangeTime, field: "observed_at"},
		{name: "event time ahead", in: edit(t, p, `"2026-03-10T06:31:12.345Z"`, `"2026-03-10T06:36:21Z"`), class: event.ClassRangeTime, field: "observed_at"},
		{name: "year 1999 without broker time", in: edit(t, p, `"2026-03-10T06:31:12.345Z"`, `"1999-12-31T23:59:59Z"`),
			noTS: true, class: event.ClassRangeTime, field: "observed_at"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts := brokerTS
			if tc.noTS {
				ts = time.Time{}
			}
			got, err := d.DecodePosition([]byte(tc.in), ts)
			if tc.class == "" {
				require.NoError(t, err)
				want := wantPosition()
				if tc.want != nil {
					tc.want(&want)
				}
				assert.Equal(t, want, got)
				return
			}
			require.Error(t, err)
			assert.Equal(t, event.Position{}, got)
			assertClass(t, err, tc.class, tc.field)
		})
	}
}

func TestDecodePrediction(t *testing.T) {
	d := newDecoder(t)
	p := validPrediction
	cases := []struct {
		name  string
		in    string
		want  func(*event.Prediction)
		class string
		field string
	}{
		{name: "canonical", in: p},
		{name: "early", in: edit(t, p, `123`, `-45`), want: func(p *event.Prediction) { p.DelayS = -45 }},
		{name: "six hours late", in: edit(t, p, `123`, `21600`), want: func(p *event.Prediction) { p.DelayS = 21600 }},
		{name: "six hours early", in: edit(t, p, `123`, `-21600`), want: func(p *event.Prediction) { p.DelayS = -21600 }},

		{name: "delay over six hours", in: edit(t, p, `123`, `21601`), class: event.ClassRangeDelay, field: "delay_s"},
		{name: "delay under minus six hours", in: edit(t, p, `123`, `-21601`), class: event.ClassRangeDelay, field: "delay_s"},
		{name: "delay overflows int64", in: edit(t, p, `123`, `99999999999999999999`), class: event.ClassRangeDelay, field: "delay_s"},
		{name: "delay with fraction", in: edit(t, p, `123`, `12.5`), class: event.ClassType, field: "delay_s"},
		{name: "delay with exponent", in: edit(t, p, `123`, `1e2`), class: event.ClassType, field: "delay_s"},
		{name: "delay as string", in: edit(t, p, `123`, `"123"`), class: event.ClassType, field: "delay_s"},
		{name: "delay as boolean", in: edit(t, p, `123`, `true`), class: event.ClassType, field: "delay_s"},
		{name: "missing stop", in: edit(t, p, `"stop":"NL:Q:57002160",`, ``), class: event.ClassMissing, field: "stop"},
		{name: "position field", in: edit(t, p, `"delay_s":123`, `"delay_s":123,"lat":52.1`), class: event.ClassUnknownField, field: "lat"},
		{name: "version 3", in: edit(t, p, `"version":1`, `"version":3`), class: event.ClassVersion},
		{name: "truncated", in: p[:20], class: event.ClassSyntax},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := d.DecodePrediction([]byte(tc.in), brokerTS)
			if tc.class == "" {
				require.NoError(t, err)
				want := wantPrediction()
				if tc.want != nil {
					tc.want(&want)
				}
				assert.Equal(t, want, got)
				return
			}
			require.Error(t, err)
			assert.Equal(t, event.Prediction{}, got)
			assertClass(t, err, tc.class, tc.field)
		})
	}
}

// assertClass checks the error's dead-letter class, its sentinel and the field it names.
func assertClass(t *testing.T, err error, class, field string) {
	t.Helper()
	require.Error(t, err)
	assert.Equal(t, class, dlq.ErrorClass(err), "error: %v", err)
	sentinel := map[string]error{"syntax": event.ErrSyntax, "schema.version": event.ErrVersion}[class]
	if sentinel == nil {
		sentinel = event.ErrSchema
		if strings.HasPrefix(class, "range.") {
			sentinel = event.ErrRange
		}
	}
	assert.ErrorIs(t, err, sentinel)
	var fe *event.FieldError
	var re *event.RangeError
	switch {
	case errors.As(err, &fe):
		assert.Equal(t, field, fe.Field)
	case errors.As(err, &re):
		assert.Equal(t, field, re.Field)
	default:
		assert.Empty(t, field, "a %T names no field", err)
	}
	assert.NotEmpty(t, err.Error())
}

func TestDecoderConfig(t *testing.T) {
	d, err := event.NewDecoder(event.Config{Box: event.Box{MinLat: 52, MaxLat: 53, MinLon: 4, MaxLon: 5}, MaxDelay: time.Hour,
		MaxAge: time.Minute, MaxAhead: time.Second})
	require.NoError(t, err)

	_, err = d.DecodePosition([]byte(validPosition), brokerTS)
	require.NoError(t, err)
	_, err = d.DecodePosition([]byte(edit(t, validPosition, `4.89`, `5.01`)), brokerTS)
	assertClass(t, err, event.ClassRangeCoordinates, "lon")
	_, err = d.DecodePrediction([]byte(edit(t, validPrediction, `123`, `3601`)), brokerTS)
	assertClass(t, err, event.ClassRangeDelay, "delay_s")
	_, err = d.DecodePrediction([]byte(validPrediction), obsTS.Add(61*time.Second))
	assertClass(t, err, event.ClassRangeTime, "observed_at")
	_, err = d.DecodePrediction([]byte(validPrediction), obsTS.Add(-2*time.Second))
	assertClass(t, err, event.ClassRangeTime, "observed_at")

	assert.Equal(t, event.Config{Box: event.Netherlands(), MaxDelay: 6 * time.Hour, MaxAge: 24 * time.Hour, MaxAhead: 5 * time.Minute},
		newDecoder(t).Config())

	for _, bad := range []event.Config{
		{Box: event.Box{MinLat: 53, MaxLat: 52, MinLon: 4, MaxLon: 5}},
		{Box: event.Box{MinLat: -91, MaxLat: 52, MinLon: 4, MaxLon: 5}},
		{MaxDelay: -time.Second},
		{MaxAge: -time.Second},
	} {
		_, err := event.NewDecoder(bad)
		assert.Error(t, err, "%+v", bad)
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	d := newDecoder(t)
	pos := wantPosition()
	pos.VehicleID = `GVB:"20\45"`
	got, err := d.DecodePosition(event.AppendPosition(nil, pos), brokerTS)
	require.NoError(t, err)
	assert.Equal(t, pos, got)
	pos.VehicleID = "GVB:\t2045"
	_, err = d.DecodePosition(event.AppendPosition(nil, pos), brokerTS)
	assertClass(t, err, event.ClassFormat, "vehicle_id") // escaped on the way out, rejected on the way in

	assert.Equal(t, validPosition, string(event.AppendPosition(nil, wantPosition())))
	assert.Equal(t, validPrediction, string(event.AppendPrediction(nil, wantPrediction())))

	pred := wantPrediction()
	pred.ObservedAt = time.Date(2026, 3, 10, 7, 31, 12, 1, time.FixedZone("CET", 3600))
	gotPred, err := d.DecodePrediction(event.AppendPrediction(nil, pred), brokerTS)
	require.NoError(t, err)
	assert.True(t, gotPred.ObservedAt.Equal(pred.ObservedAt))
	assert.Equal(t, time.UTC, gotPred.ObservedAt.Location())
}

func TestLate(t *testing.T) {
	for delay, late := range map[int32]bool{-60: false, 0: false, 180: false, 181: true, 3600: true} {
		assert.Equal(t, late, event.Prediction{DelayS: delay}.Late(), "delay %d", delay)
	}
}

func TestDecodeAllocs(t *testing.T) {
	d := newDecoder(t)
	pos, pred := []byte(validPosition), []byte(validPrediction)
	assert.LessOrEqual(t, testing.AllocsPerRun(100, func() { _, _ = d.DecodePosition(pos, brokerTS) }), 1.0)
	assert.LessOrEqual(t, testing.AllocsPerRun(100, func() { _, _ = d.DecodePrediction(pred, brokerTS) }), 1.0)
}
