// Package truncate shortens messages for headers, logs and reports without splitting a UTF-8
// sequence.
package truncate

import "unicode/utf8"

// Message shortens s to at most max bytes without splitting a UTF-8 sequence, ending a
// shortened message with "...". A max below 4 or a message that fits returns s unchanged.
func Message(s string, max int) string {
	if max < 4 || len(s) <= max {
		return s
	}
	cut := max - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
