package event_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/streamledger/streamledger/examples/ov/event"
)

// The reference decoders read the schema with encoding/json. They are the yardstick the
// hand-written scanner is measured and fuzzed against; they are laxer (field names match
// case-insensitively, a duplicated field wins last), so only "the scanner accepts implies the
// reference accepts the same values" is asserted.

type refPosition struct {
	Version    *int64   `json:"version"`
	VehicleID  *string  `json:"vehicle_id"`
	TripID     *string  `json:"trip_id"`
	Line       *string  `json:"line"`
	Operator   *string  `json:"operator"`
	Lat        *float64 `json:"lat"`
	Lon        *float64 `json:"lon"`
	Bearing    *float64 `json:"bearing"`
	ObservedAt *string  `json:"observed_at"`
}

type refPrediction struct {
	Version    *int64  `json:"version"`
	TripID     *string `json:"trip_id"`
	VehicleID  *string `json:"vehicle_id"`
	Line       *string `json:"line"`
	Operator   *string `json:"operator"`
	Stop       *string `json:"stop"`
	DelayS     *int64  `json:"delay_s"`
	ObservedAt *string `json:"observed_at"`
}

var errRefMissing = errors.New("reference: missing field")

func refDecode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("reference: trailing data")
	}
	return nil
}

func refTime(s *string) (time.Time, error) {
	if s == nil {
		return time.Time{}, errRefMissing
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	return t.UTC(), err
}

func refDecodePosition(d *event.Decoder, b []byte, ts time.Time) (event.Position, error) {
	var r refPosition
	if err := refDecode(b, &r); err != nil {
		return event.Position{}, err
	}
	if r.Version == nil || r.VehicleID == nil || r.TripID == nil || r.Line == nil || r.Operator == nil ||
		r.Lat == nil || r.Lon == nil || r.Bearing == nil {
		return event.Position{}, errRefMissing
	}
	if *r.Version != event.Version {
		return event.Position{}, fmt.Errorf("reference: version %d", *r.Version)
	}
	at, err := refTime(r.ObservedAt)
	if err != nil {
		return event.Position{}, err
	}
	p := event.Position{VehicleID: *r.VehicleID, TripID: *r.TripID, Line: *r.Line, Operator: *r.Operator,
		Lat: *r.Lat, Lon: *r.Lon, Bearing: *r.Bearing, ObservedAt: at}
	return p, d.ValidatePosition(p, ts)
}

func refDecodePrediction(d *event.Decoder, b []byte, ts time.Time) (event.Prediction, error) {
	var r refPrediction
	if err := refDecode(b, &r); err != nil {
		return event.Prediction{}, err
	}
	if r.Version == nil || r.VehicleID == nil || r.TripID == nil || r.Line == nil || r.Operator == nil ||
		r.Stop == nil || r.DelayS == nil {
		return event.Prediction{}, errRefMissing
	}
	if *r.Version != event.Version {
		return event.Prediction{}, fmt.Errorf("reference: version %d", *r.Version)
	}
	if *r.DelayS != int64(int32(*r.DelayS)) {
		return event.Prediction{}, fmt.Errorf("reference: delay %d", *r.DelayS)
	}
	at, err := refTime(r.ObservedAt)
	if err != nil {
		return event.Prediction{}, err
	}
	p := event.Prediction{TripID: *r.TripID, VehicleID: *r.VehicleID, Line: *r.Line, Operator: *r.Operator,
		Stop: *r.Stop, DelayS: int32(*r.DelayS), ObservedAt: at}
	return p, d.ValidatePrediction(p, ts)
}
