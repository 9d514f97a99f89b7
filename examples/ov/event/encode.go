package event

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendPosition appends the canonical JSON of p to dst: fields in schema order, numbers in
// their shortest exact form, the time in RFC 3339 with nanoseconds in UTC. It does not validate
// p.
func AppendPosition(dst []byte, p Position) []byte {
	dst = append(dst, `{"version":`...)
	dst = strconv.AppendInt(dst, Version, 10)
	dst = appendText(dst, `,"vehicle_id":`, p.VehicleID)
	dst = appendText(dst, `,"trip_id":`, p.TripID)
	dst = appendText(dst, `,"line":`, p.Line)
	dst = appendText(dst, `,"operator":`, p.Operator)
	dst = append(dst, `,"lat":`...)
	dst = appendFloat(dst, p.Lat)
	dst = append(dst, `,"lon":`...)
	dst = appendFloat(dst, p.Lon)
	dst = append(dst, `,"bearing":`...)
	dst = appendFloat(dst, p.Bearing)
	dst = appendTime(dst, p.ObservedAt)
	return append(dst, '}')
}

// AppendPrediction appends the canonical JSON of p to dst, as [AppendPosition] does.
func AppendPrediction(dst []byte, p Prediction) []byte {
	dst = append(dst, `{"version":`...)
	dst = strconv.AppendInt(dst, Version, 10)
	dst = appendText(dst, `,"trip_id":`, p.TripID)
	dst = appendText(dst, `,"vehicle_id":`, p.VehicleID)
	dst = appendText(dst, `,"line":`, p.Line)
	dst = appendText(dst, `,"operator":`, p.Operator)
	dst = appendText(dst, `,"stop":`, p.Stop)
	dst = append(dst, `,"delay_s":`...)
	dst = strconv.AppendInt(dst, int64(p.DelayS), 10)
	dst = appendTime(dst, p.ObservedAt)
	return append(dst, '}')
}

func appendFloat(dst []byte, v float64) []byte {
	return strconv.AppendFloat(dst, v, 'g', -1, 64)
}

func appendTime(dst []byte, t time.Time) []byte {
	dst = append(dst, `,"observed_at":"`...)
	dst = t.UTC().AppendFormat(dst, time.RFC3339Nano)
	return append(dst, '"')
}

// appendText appends prefix and s as a JSON string, escaping what JSON requires.
func appendText(dst []byte, prefix, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, prefix...)
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
			i++
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			i++
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			dst = utf8.AppendRune(dst, r) // invalid UTF-8 becomes U+FFFD, as in encoding/json
			i += n
		}
	}
	return append(dst, '"')
}
