// Package event is the data model of the OV example: the two kinds of message that the Dutch
// public-transport feed publishes, their JSON encoding, and a strict decoder whose every
// rejection is a typed error that names its dead-letter class.
//
// # Messages
//
// A [Position] is a vehicle's location, published on the vehicle-positions topic and keyed by
// vehicle id; a [Prediction] is a trip's punctuality at a stop, published on the
// arrival-predictions topic and keyed by trip id, so that the messages of one vehicle (or
// trip) share a partition. Both carry "version": [Version] and an event time, "observed_at",
// in RFC 3339. Punctuality ("delay_s") is in whole seconds, positive when late, as in the
// NDOV KV6 feed; a stop is on time when at most [OnTimeThreshold] late.
//
//	{"version":1,"vehicle_id":"GVB:2045","trip_id":"GVB:20260310:17:1043","line":"GVB:17",
//	 "operator":"GVB","lat":52.37,"lon":4.89,"bearing":87.5,"observed_at":"2026-03-10T07:31:12.345Z"}
//	{"version":1,"trip_id":"GVB:20260310:17:1043","vehicle_id":"GVB:2045","line":"GVB:17",
//	 "operator":"GVB","stop":"NL:Q:57002160","delay_s":123,"observed_at":"2026-03-10T07:31:12.345Z"}
//
// [AppendPosition] and [AppendPrediction] write this canonical form; [Decoder.DecodePosition]
// and [Decoder.DecodePrediction] read it back exactly.
//
// # Strictness
//
// The decoder accepts one JSON object and nothing else, and rejects:
//
//   - malformed JSON, trailing data, a value that is not an object ([*SyntaxError], class
//     "syntax");
//   - a "version" other than [Version] ([*VersionError], "schema.version"), whatever else the
//     message holds: a later version may add fields, and must be told apart from garbage;
//   - a required field that is missing or null, a field of the wrong JSON type, a field this
//     version does not define, a field given twice, a text field that is empty, longer than
//     [MaxIDLen] or not printable ASCII, an operator that is not an NDOV data-owner code in
//     form, a time that is not RFC 3339 ([*FieldError], "schema.missing", "schema.type",
//     "schema.unknown-field", "schema.duplicate-field", "schema.format");
//   - values out of range ([*RangeError]): coordinates outside [Config.Box] ("range.coordinates",
//     the Netherlands by default), a bearing outside [0, 360] ("range.bearing"), a delay beyond
//     plus or minus [Config.MaxDelay] ("range.delay", 6 h by default), an event time more than
//     [Config.MaxAge] before or [Config.MaxAhead] after the broker's timestamp, or outside the
//     years 2000 to 2199 ("range.time").
//
// Unknown fields are rejected rather than ignored because the schema is versioned: a producer
// that adds a field bumps the version, and a consumer that does not know it dead-letters the
// message instead of silently dropping data it cannot store. Field names match exactly (not
// case-insensitively, as encoding/json would), and a duplicated field is an error rather than
// "last one wins". JSON has no NaN or infinity; a number too large for a float64 is a range
// error. When a message has several faults the decoder reports one, in this precedence: syntax,
// then version, then a wrong type, unknown or duplicate field (the first in the input), then a
// missing field or bad form (in schema order), then a range.
//
// Every error implements ErrorClass() string, which package dlq uses as the dead letter's
// class, and matches one of [ErrSyntax], [ErrVersion], [ErrSchema] or [ErrRange] with
// errors.Is.
//
// # Speed
//
// The decoder is a hand-written scanner over the input bytes: one allocation per message for
// the text fields (they share one string) and none for numbers. It was chosen over
// encoding/json by measurement, for exactness as much as speed; BenchmarkDecode in this
// package runs both side by side, and the fuzz test checks that whatever the scanner accepts,
// encoding/json reads the same.
package event
