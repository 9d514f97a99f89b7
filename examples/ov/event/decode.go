package event

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// field names one JSON field of either schema.
type field uint8

const (
	fVersion field = iota
	fVehicleID
	fTripID
	fLine
	fOperator
	fStop
	fLat
	fLon
	fBearing
	fDelayS
	fObservedAt
	nFields
)

var fieldNames = [nFields]string{
	fVersion:    "version",
	fVehicleID:  "vehicle_id",
	fTripID:     "trip_id",
	fLine:       "line",
	fOperator:   "operator",
	fStop:       "stop",
	fLat:        "lat",
	fLon:        "lon",
	fBearing:    "bearing",
	fDelayS:     "delay_s",
	fObservedAt: "observed_at",
}

func (f field) String() string { return fieldNames[f] }

// lookup maps a key to its field; a switch on string(key) does not allocate.
func lookup(key []byte) (field, bool) {
	switch string(key) {
	case "version":
		return fVersion, true
	case "vehicle_id":
		return fVehicleID, true
	case "trip_id":
		return fTripID, true
	case "line":
		return fLine, true
	case "operator":
		return fOperator, true
	case "stop":
		return fStop, true
	case "lat":
		return fLat, true
	case "lon":
		return fLon, true
	case "bearing":
		return fBearing, true
	case "delay_s":
		return fDelayS, true
	case "observed_at":
		return fObservedAt, true
	}
	return 0, false
}

type kind uint8

const (
	kText kind = iota
	kFloat
	kInt
)

func (f field) kind() kind {
	switch f {
	case fLat, fLon, fBearing:
		return kFloat
	case fVersion, fDelayS:
		return kInt
	}
	return kText
}

func (k kind) String() string {
	switch k {
	case kFloat:
		return "a number"
	case kInt:
		return "an integer"
	}
	return "a string"
}

// schema is the set of fields of one message kind, in the order required fields are checked.
type schema struct {
	fields []field
	mask   uint16
}

func newSchema(fs ...field) schema {
	s := schema{fields: fs}
	for _, f := range fs {
		s.mask |= 1 << f
	}
	return s
}

var (
	positionSchema   = newSchema(fVersion, fVehicleID, fTripID, fLine, fOperator, fLat, fLon, fBearing, fObservedAt)
	predictionSchema = newSchema(fVersion, fTripID, fVehicleID, fLine, fOperator, fStop, fDelayS, fObservedAt)
)

// fields holds what the scanner read. A text field is a span of the input, or of the
// scanner's escape buffer when the field is in escaped (it had escapes).
type fields struct {
	seen    uint16
	escaped uint16
	span    [nFields][2]int32
	float   [nFields]float64
	integer [nFields]int64
	version int64
}

// scanner reads one flat JSON object. Text field values stay in the input unless they have
// escapes; those are unescaped into esc, which is allocated only then.
type scanner struct {
	b   []byte
	i   int
	esc []byte
}

// errSyntaxFound is returned while scanning fields for input that is not valid JSON; the
// caller reports the syntax error at the offset encoding/json finds, so that every syntax error
// is described the same way whichever field it was found in.
var errSyntaxFound = errors.New("syntax")

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// object scans the whole object, checking field names and JSON types against sc.
func (s *scanner) object(sc schema, out *fields) error {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return errSyntaxFound
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return s.end()
	}
	var keyBuf [32]byte
	for {
		s.ws()
		key, err := s.key(keyBuf[:0])
		if err != nil {
			return err
		}
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return errSyntaxFound
		}
		s.i++
		s.ws()
		f, ok := lookup(key)
		if !ok || sc.mask&(1<<f) == 0 {
			return &FieldError{Field: string(key[:min(len(key), 2*MaxIDLen)]), Problem: UnknownField}
		}
		if out.seen&(1<<f) != 0 {
			return &FieldError{Field: f.String(), Problem: DuplicateField}
		}
		out.seen |= 1 << f
		if err := s.value(f, out); err != nil {
			return err
		}
		s.ws()
		if s.i >= len(s.b) {
			return errSyntaxFound
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return s.end()
		default:
			return errSyntaxFound
		}
	}
}

func (s *scanner) end() error {
	s.ws()
	if s.i != len(s.b) {
		return errSyntaxFound
	}
	return nil
}

// key reads an object key, unescaped into dst when it has escapes.
func (s *scanner) key(dst []byte) ([]byte, error) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, errSyntaxFound
	}
	start := s.i + 1
	for j := start; j < len(s.b); j++ {
		c := s.b[j]
		if c == '"' {
			s.i = j + 1
			return s.b[start:j], nil
		}
		if c == '\\' || c < 0x20 || c >= 0x80 {
			break
		}
	}
	out, err := s.str(dst)
	return out, err
}

// str reads a JSON string at s.i into dst, unescaping it. Invalid UTF-8 is kept as it is; the
// caller's format checks reject it.
func (s *scanner) str(dst []byte) ([]byte, error) {
	s.i++ // opening quote
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return dst, nil
		case c < 0x20:
			return nil, errSyntaxFound
		case c != '\\':
			dst = append(dst, c)
			s.i++
			continue
		}
		if s.i+1 >= len(s.b) {
			return nil, errSyntaxFound
		}
		s.i += 2
		switch s.b[s.i-1] {
		case '"', '\\', '/':
			dst = append(dst, s.b[s.i-1])
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return nil, errSyntaxFound
			}
			if utf16.IsSurrogate(r) {
				r2 := utf8.RuneError
				if s.i+1 < len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
					save := s.i
					s.i += 2
					next, ok := s.hex4()
					if !ok {
						return nil, errSyntaxFound
					}
					if dec := utf16.DecodeRune(r, next); dec != utf8.RuneError {
						r2 = dec
					} else {
						s.i = save // the second escape stands on its own
					}
				}
				r = r2
			}
			dst = utf8.AppendRune(dst, r)
		default:
			return nil, errSyntaxFound
		}
	}
	return nil, errSyntaxFound
}

func (s *scanner) hex4() (rune, bool) {
	if s.i+4 > len(s.b) {
		return 0, false
	}
	var r rune
	for _, c := range s.b[s.i : s.i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	s.i += 4
	return r, true
}

// number reads a JSON number and reports whether it has a fraction or exponent.
func (s *scanner) number() (num []byte, integral bool, err error) {
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i >= len(s.b):
		return nil, false, errSyntaxFound
	case s.b[s.i] == '0':
		s.i++
	case s.b[s.i] >= '1' && s.b[s.i] <= '9':
		s.digits()
	default:
		return nil, false, errSyntaxFound
	}
	integral = true
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return nil, false, errSyntaxFound
		}
		integral = false
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return nil, false, errSyntaxFound
		}
		integral = false
	}
	return s.b[start:s.i], integral, nil
}

func (s *scanner) digits() int {
	n := 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}

// jsonType names the JSON type of the value starting at s.i, for error messages.
func (s *scanner) jsonType() string {
	if s.i >= len(s.b) {
		return "end of input"
	}
	switch c := s.b[s.i]; {
	case c == '"':
		return "a string"
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	case c == '-' || (c >= '0' && c <= '9'):
		return "a number"
	}
	return "invalid JSON"
}

func (s *scanner) isNull() bool {
	return len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null"
}

// value reads the value of field f into out, by the field's kind.
func (s *scanner) value(f field, out *fields) error {
	k := f.kind()
	if s.isNull() {
		return &FieldError{Field: f.String(), Problem: Missing, Expected: k.String(), Found: "null"}
	}
	if s.i >= len(s.b) {
		return errSyntaxFound
	}
	switch k {
	case kText:
		return s.textValue(f, out)
	case kFloat:
		return s.floatValue(f, out)
	default:
		return s.intValue(f, out)
	}
}

// textValue reads a string: as a span of the input when it has no escape, else unescaped into
// s.esc.
func (s *scanner) textValue(f field, out *fields) error {
	if s.b[s.i] != '"' {
		return s.typeError(f, kText)
	}
	start := s.i + 1
	for j := start; j < len(s.b); j++ {
		c := s.b[j]
		if c == '"' {
			s.i = j + 1
			out.span[f] = [2]int32{int32(start), int32(j)}
			return nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
	}
	from := len(s.esc)
	var err error
	if s.esc, err = s.str(s.esc); err != nil {
		return err
	}
	out.escaped |= 1 << f
	out.span[f] = [2]int32{int32(from), int32(len(s.esc))}
	return nil
}

// floatValue reads a number; one too large for a float64 reads as an infinity, which the range
// checks reject.
func (s *scanner) floatValue(f field, out *fields) error {
	if c := s.b[s.i]; c != '-' && (c < '0' || c > '9') {
		return s.typeError(f, kFloat)
	}
	num, _, err := s.number()
	if err != nil {
		return err
	}
	v, err := strconv.ParseFloat(string(num), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return errSyntaxFound
	}
	out.float[f] = v
	return nil
}

// intValue reads an integer; one out of int64's range saturates, and the range checks reject
// it. A version that is not an integer, or not [Version], is a VersionError.
func (s *scanner) intValue(f field, out *fields) error {
	if c := s.b[s.i]; c != '-' && (c < '0' || c > '9') {
		if f == fVersion {
			return &VersionError{Found: s.rawValue()}
		}
		return s.typeError(f, kInt)
	}
	num, integral, err := s.number()
	if err != nil {
		return err
	}
	if !integral {
		if f == fVersion {
			return &VersionError{Found: string(num)}
		}
		return &FieldError{Field: f.String(), Problem: WrongType, Expected: kInt.String(), Found: quote(num)}
	}
	v, err := strconv.ParseInt(string(num), 10, 64)
	if err != nil {
		v = math.MaxInt64
		if num[0] == '-' {
			v = math.MinInt64
		}
	}
	if f == fVersion {
		if v != Version {
			return &VersionError{Found: string(num)}
		}
		out.version = v
		return nil
	}
	out.integer[f] = v
	return nil
}

func (s *scanner) typeError(f field, k kind) error {
	found := s.jsonType()
	if found == "invalid JSON" {
		return errSyntaxFound
	}
	return &FieldError{Field: f.String(), Problem: WrongType, Expected: k.String(), Found: found}
}

// rawValue returns up to 32 bytes of the value at s.i, for messages.
func (s *scanner) rawValue() string {
	end := min(s.i+32, len(s.b))
	return string(s.b[s.i:end])
}

func quote(b []byte) string { return strconv.Quote(string(b)) }

// explain turns a scan failure into the error the package documents: a syntax error wins over
// everything, then a version other than [Version], then the fault found.
func explain(b []byte, err error) error {
	if err == errSyntaxFound || !json.Valid(b) {
		return syntaxError(b)
	}
	var ve *VersionError
	if errors.As(err, &ve) {
		return err
	}
	if v, ok := probeVersion(b); ok && v != "1" {
		return &VersionError{Found: v}
	}
	return err
}

// syntaxError describes invalid JSON the way encoding/json does, with its offset.
func syntaxError(b []byte) error {
	var v json.RawMessage
	err := json.Unmarshal(b, &v)
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return &SyntaxError{Offset: int(se.Offset), Msg: se.Error()}
	case err != nil:
		return &SyntaxError{Offset: len(b), Msg: err.Error()}
	}
	if len(v) > 0 && v[0] != '{' {
		return &SyntaxError{Offset: 0, Msg: "a JSON object expected, found " + (&scanner{b: v}).jsonType()}
	}
	return &SyntaxError{Offset: 0, Msg: "a JSON object expected"}
}

// probeVersion finds the raw value of the top-level "version" key of a valid JSON object. It
// runs only for messages already rejected, so its cost does not matter.
func probeVersion(b []byte) (string, bool) {
	var m map[string]json.RawMessage // map keys are exact, unlike struct field matching
	if json.Unmarshal(b, &m) != nil {
		return "", false
	}
	raw, ok := m["version"]
	return string(raw), ok
}

// DecodePosition decodes and validates a vehicle-positions message. brokerTS is the message's
// Kafka timestamp; a zero brokerTS skips the checks relative to it. Errors are the typed errors
// of this package.
func (d *Decoder) DecodePosition(b []byte, brokerTS time.Time) (Position, error) {
	s := scanner{b: b}
	var f fields
	if err := s.object(positionSchema, &f); err != nil {
		return Position{}, explain(b, err)
	}
	if err := missing(positionSchema, &f); err != nil {
		return Position{}, err
	}
	if err := s.checkText(&f, positionSchema); err != nil {
		return Position{}, err
	}
	text := s.join(&f, positionSchema)
	p := Position{
		VehicleID: f.text(text, fVehicleID),
		TripID:    f.text(text, fTripID),
		Line:      f.text(text, fLine),
		Operator:  f.text(text, fOperator),
		Lat:       f.float[fLat],
		Lon:       f.float[fLon],
		Bearing:   f.float[fBearing],
	}
	var err error
	if p.ObservedAt, err = parseTime(f.text(text, fObservedAt)); err != nil {
		return Position{}, err
	}
	if err := d.checkPosition(p, brokerTS); err != nil {
		return Position{}, err
	}
	return p, nil
}

// DecodePrediction decodes and validates an arrival-predictions message, as
// [Decoder.DecodePosition] does.
func (d *Decoder) DecodePrediction(b []byte, brokerTS time.Time) (Prediction, error) {
	s := scanner{b: b}
	var f fields
	if err := s.object(predictionSchema, &f); err != nil {
		return Prediction{}, explain(b, err)
	}
	if err := missing(predictionSchema, &f); err != nil {
		return Prediction{}, err
	}
	if err := s.checkText(&f, predictionSchema); err != nil {
		return Prediction{}, err
	}
	delay := f.integer[fDelayS]
	if delay > d.maxDelayS || delay < -d.maxDelayS {
		return Prediction{}, d.delayError(strconv.FormatInt(delay, 10))
	}
	text := s.join(&f, predictionSchema)
	p := Prediction{
		TripID:    f.text(text, fTripID),
		VehicleID: f.text(text, fVehicleID),
		Line:      f.text(text, fLine),
		Operator:  f.text(text, fOperator),
		Stop:      f.text(text, fStop),
		DelayS:    int32(delay),
	}
	var err error
	if p.ObservedAt, err = parseTime(f.text(text, fObservedAt)); err != nil {
		return Prediction{}, err
	}
	if err := d.checkPrediction(p, brokerTS); err != nil {
		return Prediction{}, err
	}
	return p, nil
}

func (f *fields) text(text string, fl field) string {
	sp := f.span[fl]
	return text[sp[0]:sp[1]]
}

// raw returns the bytes of a text field as scanned.
func (s *scanner) raw(f *fields, fl field) []byte {
	sp := f.span[fl]
	if f.escaped&(1<<fl) != 0 {
		return s.esc[sp[0]:sp[1]]
	}
	return s.b[sp[0]:sp[1]]
}

// join makes every text field of sc with one allocation and points the spans into it.
func (s *scanner) join(f *fields, sc schema) string {
	n := 0
	for _, fl := range sc.fields {
		if fl.kind() == kText {
			n += len(s.raw(f, fl))
		}
	}
	var sb strings.Builder
	sb.Grow(n)
	for _, fl := range sc.fields {
		if fl.kind() == kText {
			v := s.raw(f, fl)
			start := sb.Len()
			sb.Write(v)
			f.span[fl] = [2]int32{int32(start), int32(sb.Len())}
		}
	}
	return sb.String()
}

func missing(sc schema, f *fields) error {
	for _, fl := range sc.fields {
		if f.seen&(1<<fl) == 0 {
			return &FieldError{Field: fl.String(), Problem: Missing, Expected: fl.kind().String(), Found: "nothing"}
		}
	}
	return nil
}

// checkText checks the form of every text field before any string is made.
func (s *scanner) checkText(f *fields, sc schema) error {
	for _, fl := range sc.fields {
		if fl.kind() != kText {
			continue
		}
		v := s.raw(f, fl)
		var err error
		switch fl {
		case fObservedAt:
			// parsed later; only bound the length here
			if len(v) > MaxIDLen {
				err = formatError(fl, v, "an RFC 3339 time")
			}
		case fOperator:
			if !operatorCode(v) {
				err = formatError(fl, v, "an NDOV data-owner code (2 to 16 of A-Z, 0-9, starting with a letter)")
			}
		default:
			if !idText(v) {
				err = formatError(fl, v, "1 to 64 printable ASCII characters without spaces")
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func formatError(fl field, v []byte, expected string) error {
	if len(v) > 2*MaxIDLen {
		v = v[:2*MaxIDLen]
	}
	return &FieldError{Field: fl.String(), Problem: BadFormat, Expected: expected, Found: quote(v)}
}

func idText[T string | []byte](v T) bool {
	if len(v) == 0 || len(v) > MaxIDLen {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] <= ' ' || v[i] > '~' {
			return false
		}
	}
	return true
}

func operatorCode[T string | []byte](v T) bool {
	if len(v) < 2 || len(v) > 16 || v[0] < 'A' || v[0] > 'Z' {
		return false
	}
	for i := 1; i < len(v); i++ {
		if (v[i] < 'A' || v[i] > 'Z') && (v[i] < '0' || v[i] > '9') {
			return false
		}
	}
	return true
}

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, &FieldError{Field: fObservedAt.String(), Problem: BadFormat, Expected: "an RFC 3339 time", Found: strconv.Quote(s)}
	}
	return t.UTC(), nil
}
