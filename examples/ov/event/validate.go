package event

import (
	"strconv"
	"time"
)

// Event times outside [2000-01-01, 2200-01-01) are rejected whatever the broker's timestamp
// says: the window arithmetic of a processor needs them far from the limits of int64
// nanoseconds.
const (
	minUnix = 946684800  // 2000-01-01T00:00:00Z
	maxUnix = 7258118400 // 2200-01-01T00:00:00Z
)

// ValidatePosition checks p as [Decoder.DecodePosition] checks what it decodes: text fields,
// coordinates, bearing and event time. Every position the decoder returns passes it.
func (d *Decoder) ValidatePosition(p Position, brokerTS time.Time) error {
	if err := checkIDs(p.VehicleID, p.TripID, p.Line, p.Operator, "", false); err != nil {
		return err
	}
	return d.checkPosition(p, brokerTS)
}

// ValidatePrediction checks p as [Decoder.DecodePrediction] checks what it decodes.
func (d *Decoder) ValidatePrediction(p Prediction, brokerTS time.Time) error {
	if err := checkIDs(p.VehicleID, p.TripID, p.Line, p.Operator, p.Stop, true); err != nil {
		return err
	}
	if int64(p.DelayS) > d.maxDelayS || int64(p.DelayS) < -d.maxDelayS {
		return d.delayError(strconv.FormatInt(int64(p.DelayS), 10))
	}
	return d.checkPrediction(p, brokerTS)
}

func checkIDs(vehicle, trip, line, operator, stop string, withStop bool) error {
	const idForm = "1 to 64 printable ASCII characters without spaces"
	for _, c := range []struct {
		f field
		v string
	}{{fVehicleID, vehicle}, {fTripID, trip}, {fLine, line}} {
		if !idText(c.v) {
			return formatError(c.f, []byte(c.v), idForm)
		}
	}
	if !operatorCode(operator) {
		return formatError(fOperator, []byte(operator), "an NDOV data-owner code (2 to 16 of A-Z, 0-9, starting with a letter)")
	}
	if withStop && !idText(stop) {
		return formatError(fStop, []byte(stop), idForm)
	}
	return nil
}

func (d *Decoder) checkPosition(p Position, brokerTS time.Time) error {
	if !d.box.Contains(p.Lat, p.Lon) { // false for NaN too
		field, v := fLat, p.Lat
		if p.Lat >= d.box.MinLat && p.Lat <= d.box.MaxLat {
			field, v = fLon, p.Lon
		}
		return &RangeError{Field: field.String(), Class: ClassRangeCoordinates, Expected: "a position inside " + d.box.String(),
			Found: strconv.FormatFloat(v, 'g', -1, 64)}
	}
	if !(p.Bearing >= 0 && p.Bearing <= 360) {
		return &RangeError{Field: fBearing.String(), Class: ClassRangeBearing, Expected: "0 to 360 degrees",
			Found: strconv.FormatFloat(p.Bearing, 'g', -1, 64)}
	}
	return d.checkTime(p.ObservedAt, brokerTS)
}

func (d *Decoder) checkPrediction(p Prediction, brokerTS time.Time) error {
	return d.checkTime(p.ObservedAt, brokerTS)
}

func (d *Decoder) delayError(found string) error {
	return &RangeError{Field: fDelayS.String(), Class: ClassRangeDelay,
		Expected: "at most " + strconv.FormatInt(d.maxDelayS, 10) + " s early or late", Found: found}
}

func (d *Decoder) checkTime(t, brokerTS time.Time) error {
	if u := t.Unix(); u < minUnix || u >= maxUnix {
		return &RangeError{Field: fObservedAt.String(), Class: ClassRangeTime, Expected: "a time in the years 2000 to 2199",
			Found: t.Format(time.RFC3339Nano)}
	}
	if brokerTS.IsZero() {
		return nil
	}
	if lo := brokerTS.Add(-d.maxAge); t.Before(lo) {
		return &RangeError{Field: fObservedAt.String(), Class: ClassRangeTime,
			Expected: "at most " + d.maxAge.String() + " before the broker timestamp " + brokerTS.UTC().Format(time.RFC3339Nano),
			Found:    t.Format(time.RFC3339Nano)}
	}
	if hi := brokerTS.Add(d.maxAhead); t.After(hi) {
		return &RangeError{Field: fObservedAt.String(), Class: ClassRangeTime,
			Expected: "at most " + d.maxAhead.String() + " after the broker timestamp " + brokerTS.UTC().Format(time.RFC3339Nano),
			Found:    t.Format(time.RFC3339Nano)}
	}
	return nil
}
