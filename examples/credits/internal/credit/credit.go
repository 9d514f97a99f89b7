package credit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/streamledger/streamledger/sink"
)

// MaxIDLen bounds op_id and account, in bytes.
const MaxIDLen = 256

// Credit adds Amount (minor units) to the balance of Account, once per ID.
type Credit struct {
	ID      string `json:"op_id"`
	Account string `json:"account"`
	Amount  int64  `json:"amount"`
}

// Payload returns the canonical encoding of c: its fields in a fixed order, no spacing.
func (c Credit) Payload() []byte {
	if plain(c.ID) && plain(c.Account) {
		return appendCanonical(make([]byte, 0, len(canonOpen)+len(c.ID)+len(canonAccount)+len(c.Account)+len(canonAmount)+21), c)
	}
	// Marshal cannot fail on two strings and an integer.
	b, _ := json.Marshal(c)
	return b
}

// Operation returns the operation the effect sink records: c's id and canonical payload.
func (c Credit) Operation() sink.Operation {
	return sink.Operation{ID: c.ID, Payload: c.Payload()}
}

// Validate reports whether c is a credit the example applies: ids present, well formed, and a
// positive amount.
func (c Credit) Validate() error {
	if err := checkID("op_id", c.ID); err != nil {
		return err
	}
	if err := checkID("account", c.Account); err != nil {
		return err
	}
	if c.Amount <= 0 {
		return &Error{Class: ClassAmount, Field: "amount", Msg: fmt.Sprintf("a positive integer expected, found %d", c.Amount)}
	}
	return nil
}

func checkID(field, s string) error {
	switch {
	case s == "":
		return &Error{Class: ClassMissingField, Field: field, Msg: "a non-empty string expected, found an empty one"}
	case len(s) > MaxIDLen:
		return &Error{Class: ClassMalformed, Field: field, Msg: fmt.Sprintf("at most %d bytes expected, found %d", MaxIDLen, len(s))}
	}
	for i, r := range s {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return &Error{Class: ClassMalformed, Field: field, Msg: fmt.Sprintf("no control character expected, found %U at byte %d", r, i)}
		}
	}
	return nil
}

// field bits, to find missing and repeated fields.
const (
	hasID = 1 << iota
	hasAccount
	hasAmount
)

// Decode parses one message value as a credit and validates it. Every error is an [*Error].
func Decode(b []byte) (Credit, error) {
	if c, ok := decodeCanonical(b); ok {
		return c, nil
	}
	return decodeStrict(b)
}

// decodeStrict is Decode for any input: a streaming JSON parse that rejects what a lenient
// decoder would let through.
func decodeStrict(b []byte) (Credit, error) {
	var c Credit
	if !utf8.Valid(b) {
		return c, malformed("", "UTF-8 text expected, found invalid bytes")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := expectDelim(dec, '{', "a JSON object"); err != nil {
		return c, err
	}
	seen := 0
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return c, syntax(err)
		}
		key, ok := tok.(string)
		if !ok {
			return c, malformed("", fmt.Sprintf("a field name expected, found %v", tok))
		}
		var bit int
		switch key {
		case "op_id":
			bit = hasID
		case "account":
			bit = hasAccount
		case "amount":
			bit = hasAmount
		default:
			return c, malformed(key, "no such field: op_id, account and amount expected")
		}
		if seen&bit != 0 {
			return c, malformed(key, "field repeated")
		}
		seen |= bit
		tok, err = dec.Token()
		if err != nil {
			return c, syntax(err)
		}
		switch bit {
		case hasID, hasAccount:
			s, ok := tok.(string)
			if !ok {
				return c, malformed(key, fmt.Sprintf("a string expected, found %s", describe(tok)))
			}
			if bit == hasID {
				c.ID = s
			} else {
				c.Account = s
			}
		case hasAmount:
			n, ok := tok.(json.Number)
			if !ok {
				return c, malformed(key, fmt.Sprintf("an integer expected, found %s", describe(tok)))
			}
			v, err := strconv.ParseInt(string(n), 10, 64)
			if err != nil {
				if errors.Is(err, strconv.ErrRange) {
					return c, &Error{Class: ClassAmount, Field: key, Msg: fmt.Sprintf("an integer within int64 expected, found %s", n)}
				}
				return c, malformed(key, fmt.Sprintf("an integer expected, found %s", n))
			}
			c.Amount = v
		}
	}
	if err := expectDelim(dec, '}', "the end of the object"); err != nil {
		return c, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return c, malformed("", "nothing after the object expected, found more data")
	}
	for _, f := range []struct {
		bit  int
		name string
	}{{hasID, "op_id"}, {hasAccount, "account"}, {hasAmount, "amount"}} {
		if seen&f.bit == 0 {
			return c, &Error{Class: ClassMissingField, Field: f.name, Msg: "field missing"}
		}
	}
	return c, c.Validate()
}

func expectDelim(dec *json.Decoder, d json.Delim, what string) error {
	tok, err := dec.Token()
	if err != nil {
		return syntax(err)
	}
	if tok != d {
		return malformed("", fmt.Sprintf("%s expected, found %s", what, describe(tok)))
	}
	return nil
}

func describe(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			return "an object"
		case '[':
			return "an array"
		}
		return strconv.Quote(v.String())
	case string:
		return "a string"
	case json.Number:
		return "the number " + v.String()
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", tok)
}

func syntax(err error) error {
	if errors.Is(err, io.EOF) {
		return malformed("", "a complete JSON object expected, found the end of the message")
	}
	return malformed("", "JSON expected: "+err.Error())
}

func malformed(field, msg string) *Error {
	return &Error{Class: ClassMalformed, Field: field, Msg: msg}
}
