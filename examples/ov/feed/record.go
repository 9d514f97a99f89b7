package feed

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"
)

// jsonRecord is one line of a JSONL feed file. Key and value are written as text when they are
// valid UTF-8 and in base64 otherwise, so that any bytes survive (a truncated message may cut
// a character in two). A missing value is a null value; an empty string an empty one.
type jsonRecord struct {
	Topic     string    `json:"topic"`
	Key       *string   `json:"key,omitempty"`
	KeyB64    []byte    `json:"key_b64,omitempty"`
	Timestamp time.Time `json:"timestamp"`
	Value     *string   `json:"value,omitempty"`
	ValueB64  []byte    `json:"value_b64,omitempty"`
	Intent    string    `json:"intent,omitempty"`
	Fault     string    `json:"fault,omitempty"`
}

// Writer writes records as JSON lines: one object per line with topic, key, timestamp and
// value (and, for information, the generator's intent).
type Writer struct {
	w   *bufio.Writer
	enc *json.Encoder
}

// NewWriter returns a Writer on w. Call Flush when done.
func NewWriter(w io.Writer) *Writer {
	bw := bufio.NewWriterSize(w, 1<<16)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	return &Writer{w: bw, enc: enc}
}

// Write writes one record.
func (w *Writer) Write(r Record) error {
	jr := jsonRecord{Topic: r.Topic, Timestamp: r.Timestamp.UTC(), Fault: r.Fault}
	if r.Intent != Normal {
		jr.Intent = r.Intent.String()
	}
	jr.Key, jr.KeyB64 = textOrBytes(r.Key)
	jr.Value, jr.ValueB64 = textOrBytes(r.Value)
	return w.enc.Encode(&jr)
}

// Flush writes any buffered data.
func (w *Writer) Flush() error { return w.w.Flush() }

func textOrBytes(b []byte) (*string, []byte) {
	switch {
	case b == nil:
		return nil, nil
	case utf8.Valid(b):
		s := string(b)
		return &s, nil
	}
	return nil, b
}

// Reader reads records written by a [Writer].
type Reader struct {
	s    *bufio.Scanner
	line int
}

// NewReader returns a Reader on r.
func NewReader(r io.Reader) *Reader {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 0, 1<<16), 16<<20)
	return &Reader{s: s}
}

// ErrFile is wrapped by every error about the content of a feed file.
var ErrFile = errors.New("feed: malformed feed file")

// Next returns the next record, or io.EOF after the last one. Blank lines are skipped.
func (r *Reader) Next() (Record, error) {
	for r.s.Scan() {
		r.line++
		b := r.s.Bytes()
		if len(b) == 0 {
			continue
		}
		var jr jsonRecord
		if err := json.Unmarshal(b, &jr); err != nil {
			return Record{}, fmt.Errorf("%w: line %d: %w", ErrFile, r.line, err)
		}
		if jr.Topic == "" || jr.Timestamp.IsZero() {
			return Record{}, fmt.Errorf("%w: line %d: a topic and a timestamp are required", ErrFile, r.line)
		}
		if (jr.Key != nil && jr.KeyB64 != nil) || (jr.Value != nil && jr.ValueB64 != nil) {
			return Record{}, fmt.Errorf("%w: line %d: a key or value given both as text and as base64", ErrFile, r.line)
		}
		rec := Record{Topic: jr.Topic, Timestamp: jr.Timestamp.UTC(), Key: jr.KeyB64, Value: jr.ValueB64, Fault: jr.Fault}
		if jr.Key != nil {
			rec.Key = []byte(*jr.Key)
		}
		if jr.Value != nil {
			rec.Value = []byte(*jr.Value)
		}
		switch jr.Intent {
		case "", "normal":
		case "late":
			rec.Intent = Late
		case "malformed":
			rec.Intent = Malformed
		default:
			return Record{}, fmt.Errorf("%w: line %d: intent %q is not normal, late or malformed", ErrFile, r.line, jr.Intent)
		}
		return rec, nil
	}
	if err := r.s.Err(); err != nil {
		return Record{}, fmt.Errorf("feed: reading line %d: %w", r.line+1, err)
	}
	return Record{}, io.EOF
}

// ReadAll reads every record of r.
func ReadAll(r io.Reader) ([]Record, error) {
	rd := NewReader(r)
	var out []Record
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, rec)
	}
}
