package credit

import (
	"bytes"
	"strconv"
)

// The canonical encoding of a credit, as encoding/json writes it (Payload), around its two
// strings and its amount.
const (
	canonOpen    = `{"op_id":"`
	canonAccount = `","account":"`
	canonAmount  = `","amount":`
)

// plain reports whether encoding/json writes s as it is between quotes: printable ASCII
// other than the quote, the backslash and the characters it escapes for HTML (<, >, &).
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if !plainByte(s[i]) {
			return false
		}
	}
	return true
}

func plainByte(b byte) bool {
	return b >= 0x20 && b < 0x7f && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
}

// appendCanonical appends c's canonical encoding; its strings must be plain.
func appendCanonical(b []byte, c Credit) []byte {
	b = append(b, canonOpen...)
	b = append(b, c.ID...)
	b = append(b, canonAccount...)
	b = append(b, c.Account...)
	b = append(b, canonAmount...)
	b = strconv.AppendInt(b, c.Amount, 10)
	return append(b, '}')
}

// decodeCanonical decodes a message that is exactly the canonical encoding of a valid credit
// with plain strings, which is what producers that use Payload send: ok is false for anything
// else, which decodeStrict then judges. It returns what decodeStrict returns for the same
// input, without its streaming parse.
func decodeCanonical(b []byte) (Credit, bool) {
	rest, ok := bytes.CutPrefix(b, []byte(canonOpen))
	if !ok {
		return Credit{}, false
	}
	id, rest, ok := plainString(rest, canonAccount)
	if !ok {
		return Credit{}, false
	}
	account, rest, ok := plainString(rest, canonAmount)
	if !ok {
		return Credit{}, false
	}
	digits, ok := bytes.CutSuffix(rest, []byte("}"))
	if !ok || len(digits) == 0 || len(digits) > 19 || digits[0] < '1' || digits[0] > '9' {
		return Credit{}, false
	}
	for _, d := range digits {
		if d < '0' || d > '9' {
			return Credit{}, false
		}
	}
	amount, err := strconv.ParseInt(string(digits), 10, 64)
	if err != nil {
		return Credit{}, false
	}
	return Credit{ID: id, Account: account, Amount: amount}, true
}

// plainString reads a non-empty plain string of at most MaxIDLen bytes up to sep.
func plainString(b []byte, sep string) (string, []byte, bool) {
	i := bytes.Index(b, []byte(sep))
	if i <= 0 || i > MaxIDLen {
		return "", nil, false
	}
	for _, c := range b[:i] {
		if !plainByte(c) {
			return "", nil, false
		}
	}
	return string(b[:i]), b[i+len(sep):], true
}
