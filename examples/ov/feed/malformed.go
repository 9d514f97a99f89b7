package feed

import (
	"bytes"
	"strconv"
	"time"

	"github.com/streamledger/streamledger/examples/ov/event"
)

// The kinds of corruption of a malformed record ([Record.Fault]).
const (
	FaultTruncated      = "truncated"
	FaultWrongType      = "wrong-type"
	FaultOutOfRange     = "out-of-range"
	FaultUnknownVersion = "unknown-version"
)

// corrupt turns the canonical message of an event into one the decoder must reject, the way
// real feeds go wrong: a message cut short, a number sent as text, a value out of range, a
// producer on a newer schema.
func (g *Generator) corrupt(value []byte, prediction bool, pos event.Position, pred event.Prediction, ts time.Time) ([]byte, string) {
	switch g.rng.IntN(4) {
	case 0:
		return value[:g.rng.IntN(len(value))], FaultTruncated
	case 1:
		field := []byte(`"lat":`)
		if prediction {
			field = []byte(`"delay_s":`)
		}
		if g.rng.IntN(2) == 0 {
			field = []byte(`"vehicle_id":`)
		}
		return quoteOrUnquote(value, field), FaultWrongType
	case 2:
		if prediction {
			if g.rng.IntN(2) == 0 {
				pred.DelayS = int32(21601 + g.rng.IntN(40000))
				if g.rng.IntN(2) == 0 {
					pred.DelayS = -pred.DelayS
				}
			} else {
				pred.ObservedAt = ts.Add(-event.DefaultMaxAge - time.Duration(1+g.rng.IntN(72))*time.Hour)
			}
			return event.AppendPrediction(nil, pred), FaultOutOfRange
		}
		switch g.rng.IntN(3) {
		case 0:
			pos.Lat = round6(47 + g.rng.Float64()*3.5) // Belgium, France
		case 1:
			pos.Lon = round6(7.5 + g.rng.Float64()*2) // Germany
		default:
			pos.Bearing = 360.5 + float64(g.rng.IntN(300))
		}
		return event.AppendPosition(nil, pos), FaultOutOfRange
	default:
		v := bytes.Replace(value, []byte(`{"version":1`), []byte(`{"version":2`), 1)
		v = append(v[:len(v)-1], `,"occupancy":`...)
		v = strconv.AppendInt(v, int64(g.rng.IntN(5)), 10)
		return append(v, '}'), FaultUnknownVersion
	}
}

// quoteOrUnquote turns the value of field into the other JSON type: a number into a string,
// a string into a bare number-like token wrapped as a number where possible.
func quoteOrUnquote(value, field []byte) []byte {
	i := bytes.Index(value, field)
	if i < 0 {
		return value
	}
	start := i + len(field)
	end := start
	for end < len(value) && value[end] != ',' && value[end] != '}' {
		end++
	}
	out := append([]byte(nil), value[:start]...)
	v := value[start:end]
	if len(v) > 0 && v[0] == '"' {
		out = strconv.AppendInt(out, int64(len(v)), 10) // a number where text belongs
	} else {
		out = append(out, '"')
		out = append(out, v...)
		out = append(out, '"')
	}
	return append(out, value[end:]...)
}
