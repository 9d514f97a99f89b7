package dlq

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// HeaderPrefix starts the name of every header this package writes. Headers with this prefix are
// reserved: [NewDeadLetter] drops them from the original message (keeping only
// [HeaderReplayCount]), and a replay never republishes them. Kafka Connect's
// `__connect.errors.` headers are the model; the leading double underscore marks them as
// infrastructure rather than application data.
const HeaderPrefix = "__streamledger.dlq."

// The headers of a dead letter. Values are UTF-8 text so that a dead letter can be read with any
// tool (kcat, a console consumer): integers in decimal, times in RFC 3339 with nanoseconds in
// UTC. Headers that are absent decode to the zero value, except the required ones
// ([HeaderVersion], [HeaderTopic], [HeaderPartition], [HeaderOffset]).
const (
	// HeaderVersion is the version of this header layout, currently [Version]. It is what marks a
	// message as a dead letter.
	HeaderVersion = HeaderPrefix + "version"
	// HeaderTopic is the topic the original message was consumed from.
	HeaderTopic = HeaderPrefix + "topic"
	// HeaderPartition is the partition of the original message, in decimal.
	HeaderPartition = HeaderPrefix + "partition"
	// HeaderOffset is the offset of the original message, in decimal.
	HeaderOffset = HeaderPrefix + "offset"
	// HeaderTimestamp is the timestamp of the original message; absent when it had none.
	HeaderTimestamp = HeaderPrefix + "timestamp"
	// HeaderErrorClass is the class of the failure, see [ErrorClass].
	HeaderErrorClass = HeaderPrefix + "error.class"
	// HeaderErrorMessage is the failure's message (err.Error()).
	HeaderErrorMessage = HeaderPrefix + "error.message"
	// HeaderConsumer identifies the consumer instance that dead-lettered the message.
	HeaderConsumer = HeaderPrefix + "consumer"
	// HeaderFailedAt is when the consumer gave up on the message.
	HeaderFailedAt = HeaderPrefix + "failed.at"
	// HeaderReplayCount is how many times the message has been replayed from a dead-letter topic.
	// Unlike the other reserved headers it travels with a replayed message, so that a message
	// failing again is dead-lettered with its count and [Policy] can stop a poison loop.
	HeaderReplayCount = HeaderPrefix + "replay.count"
	// HeaderLostEnd is, on a letter of [ClassLost], one past the last lost offset, in decimal:
	// the letter stands for the offsets from [HeaderOffset] up to it. Absent on the letter of a
	// message.
	HeaderLostEnd = HeaderPrefix + "lost.end"
)

// Version is the header layout written by this package.
const Version = "1"

// Header is one Kafka record header. A nil Value is a null header value, distinct from an empty
// one; both are preserved.
type Header struct {
	Key   string
	Value []byte
}

// isReserved reports whether a header name carries [HeaderPrefix].
func isReserved(key string) bool { return strings.HasPrefix(key, HeaderPrefix) }

// timeLayout is RFC 3339 with nanoseconds; times are always formatted in UTC.
const timeLayout = time.RFC3339Nano

// Headers returns the headers of the dead letter as written to the dead-letter topic: the
// original headers in their order, then the reserved headers. It returns an error wrapping
// [ErrInvalid] if the letter could not be decoded again: an empty topic, a negative partition,
// offset or replay count, a time outside years 0 to 9999.
func (d DeadLetter) Headers() ([]Header, error) {
	if err := d.validate(); err != nil {
		return nil, err
	}
	hs := make([]Header, 0, len(d.Record.Headers)+len(known))
	for _, h := range d.Record.Headers {
		if !isReserved(h.Key) {
			hs = append(hs, h)
		}
	}
	// Every reserved value is cut from one buffer: two allocations per letter instead of one
	// per header. The three-index slices keep an append to one value from overwriting the next.
	buf := make([]byte, 0, len(Version)+len(d.Topic)+len(d.ErrorClass)+len(d.ErrorMessage)+len(d.ConsumerID)+2*len(timeLayout)+3*20)
	add := func(key string, appendValue func([]byte) []byte) {
		start := len(buf)
		buf = appendValue(buf)
		hs = append(hs, Header{Key: key, Value: buf[start:len(buf):len(buf)]})
	}
	appendString := func(v string) func([]byte) []byte {
		return func(b []byte) []byte { return append(b, v...) }
	}
	appendTime := func(t time.Time) func([]byte) []byte {
		return func(b []byte) []byte { return t.UTC().AppendFormat(b, timeLayout) }
	}
	add(HeaderVersion, appendString(Version))
	add(HeaderTopic, appendString(d.Topic))
	add(HeaderPartition, func(b []byte) []byte { return strconv.AppendInt(b, int64(d.Partition), 10) })
	add(HeaderOffset, func(b []byte) []byte { return strconv.AppendInt(b, d.Offset, 10) })
	if !d.Timestamp.IsZero() {
		add(HeaderTimestamp, appendTime(d.Timestamp))
	}
	add(HeaderErrorClass, appendString(d.ErrorClass))
	add(HeaderErrorMessage, appendString(d.ErrorMessage))
	add(HeaderConsumer, appendString(d.ConsumerID))
	if !d.FailedAt.IsZero() {
		add(HeaderFailedAt, appendTime(d.FailedAt))
	}
	if d.ReplayCount > 0 {
		add(HeaderReplayCount, func(b []byte) []byte { return strconv.AppendInt(b, int64(d.ReplayCount), 10) })
	}
	if d.LostEnd > 0 {
		add(HeaderLostEnd, func(b []byte) []byte { return strconv.AppendInt(b, d.LostEnd, 10) })
	}
	return hs, nil
}

func (d DeadLetter) validate() error {
	switch {
	case d.Topic == "":
		return fmt.Errorf("%w: the original topic is empty", ErrInvalid)
	case d.Partition < 0:
		return fmt.Errorf("%w: expected a partition >= 0, found %d", ErrInvalid, d.Partition)
	case d.Offset < 0:
		return fmt.Errorf("%w: expected an offset >= 0, found %d", ErrInvalid, d.Offset)
	case d.LostEnd != 0 && d.LostEnd <= d.Offset:
		return fmt.Errorf("%w: expected a lost range's end above its first offset %d, found %d", ErrInvalid, d.Offset, d.LostEnd)
	case d.ReplayCount < 0:
		return fmt.Errorf("%w: expected a replay count >= 0, found %d", ErrInvalid, d.ReplayCount)
	case !encodable(d.Timestamp):
		return fmt.Errorf("%w: expected a timestamp in years 0 to 9999, found %s", ErrInvalid, d.Timestamp)
	case !encodable(d.FailedAt):
		return fmt.Errorf("%w: expected a failure time in years 0 to 9999, found %s", ErrInvalid, d.FailedAt)
	}
	return nil
}

// encodable reports whether RFC 3339 can represent t (zero times are not written at all).
func encodable(t time.Time) bool {
	if t.IsZero() {
		return true
	}
	y := t.UTC().Year()
	return y >= 0 && y <= 9999
}

// ReplayHeaders returns the headers a replay republishes: the original headers in their order,
// then [HeaderReplayCount] set to ReplayCount+1. No other reserved header is included.
func (d DeadLetter) ReplayHeaders() []Header {
	hs := make([]Header, 0, len(d.Record.Headers)+1)
	for _, h := range d.Record.Headers {
		if !isReserved(h.Key) {
			hs = append(hs, h)
		}
	}
	return append(hs, Header{HeaderReplayCount, strconv.AppendInt(nil, int64(d.ReplayCount)+1, 10)})
}

// Decode parses a message read from a dead-letter topic back into the [DeadLetter] that
// [DeadLetter.Headers] wrote. Key and value are used as they are (not copied).
//
// It never panics, whatever the input. A message without [HeaderVersion] returns an error
// wrapping [ErrNotDeadLetter]; a reserved header that is missing, repeated or malformed returns a
// [*headerError] (wrapping [ErrBadHeader]) naming the header and the value found. Reserved
// headers this version does not know are ignored, so that a later version can add some.
func Decode(key, value []byte, headers []Header) (DeadLetter, error) {
	var d DeadLetter
	d.Key, d.Value = key, value

	var seen [len(known)]int
	var raw [len(known)][]byte
	for _, h := range headers {
		if !isReserved(h.Key) {
			if d.Record.Headers == nil {
				d.Record.Headers = make([]Header, 0, max(len(headers)-len(known), 1))
			}
			d.Record.Headers = append(d.Record.Headers, h)
			continue
		}
		for i, k := range known {
			if h.Key == k {
				seen[i]++
				raw[i] = h.Value
				break
			}
		}
	}
	for i, n := range seen {
		if n > 1 {
			return DeadLetter{}, &headerError{Header: known[i], Value: raw[i], Reason: fmt.Sprintf("appears %d times, expected once", n)}
		}
	}
	if seen[hVersion] == 0 {
		return DeadLetter{}, fmt.Errorf("%w: no %s header", ErrNotDeadLetter, HeaderVersion)
	}
	if v := string(raw[hVersion]); v != Version {
		return DeadLetter{}, &headerError{Header: HeaderVersion, Value: raw[hVersion], Reason: "expected version " + Version}
	}
	for _, i := range []int{hTopic, hPartition, hOffset} {
		if seen[i] == 0 {
			return DeadLetter{}, &headerError{Header: known[i], Reason: "missing"}
		}
	}
	if len(raw[hTopic]) == 0 {
		return DeadLetter{}, &headerError{Header: HeaderTopic, Value: raw[hTopic], Reason: "expected a topic name"}
	}
	d.Topic = string(raw[hTopic])

	p, err := parseInt(HeaderPartition, raw[hPartition], 32, "a partition")
	if err != nil {
		return DeadLetter{}, err
	}
	d.Partition = int32(p)
	if d.Offset, err = parseInt(HeaderOffset, raw[hOffset], 64, "an offset"); err != nil {
		return DeadLetter{}, err
	}
	if seen[hReplayCount] > 0 {
		n, err := parseInt(HeaderReplayCount, raw[hReplayCount], 31, "a replay count")
		if err != nil {
			return DeadLetter{}, err
		}
		d.ReplayCount = int(n)
	}
	if seen[hLostEnd] > 0 {
		if d.LostEnd, err = parseInt(HeaderLostEnd, raw[hLostEnd], 64, "an offset"); err != nil {
			return DeadLetter{}, err
		}
	}
	if seen[hTimestamp] > 0 {
		if d.Timestamp, err = parseTime(HeaderTimestamp, raw[hTimestamp]); err != nil {
			return DeadLetter{}, err
		}
	}
	if seen[hFailedAt] > 0 {
		if d.FailedAt, err = parseTime(HeaderFailedAt, raw[hFailedAt]); err != nil {
			return DeadLetter{}, err
		}
	}
	d.ErrorClass = string(raw[hErrorClass])
	d.ErrorMessage = string(raw[hErrorMessage])
	d.ConsumerID = string(raw[hConsumer])
	return d, nil
}

// known lists the reserved headers Decode understands; the h* constants index it.
var known = [...]string{
	HeaderVersion, HeaderTopic, HeaderPartition, HeaderOffset, HeaderTimestamp,
	HeaderErrorClass, HeaderErrorMessage, HeaderConsumer, HeaderFailedAt, HeaderReplayCount, HeaderLostEnd,
}

const (
	hVersion = iota
	hTopic
	hPartition
	hOffset
	hTimestamp
	hErrorClass
	hErrorMessage
	hConsumer
	hFailedAt
	hReplayCount
	hLostEnd
)

// parseInt accepts only canonical non-negative decimal: no sign, no leading zeros, no spaces,
// so that every accepted value re-encodes to the same bytes.
func parseInt(header string, v []byte, bits int, what string) (int64, error) {
	bad := func() (int64, error) {
		return 0, &headerError{Header: header, Value: v, Reason: fmt.Sprintf("expected %s in decimal, 0 to %d", what, int64(1)<<(bits-1)-1)}
	}
	if len(v) == 0 || (len(v) > 1 && v[0] == '0') || v[0] == '+' || v[0] == '-' {
		return bad()
	}
	n, err := strconv.ParseInt(string(v), 10, bits)
	if err != nil {
		return bad()
	}
	return n, nil
}

func parseTime(header string, v []byte) (time.Time, error) {
	t, err := time.Parse(timeLayout, string(v))
	if err != nil {
		return time.Time{}, &headerError{Header: header, Value: v, Reason: "expected an RFC 3339 time"}
	}
	return t.UTC(), nil
}
