package event_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/examples/ov/event"
)

// FuzzDecode feeds arbitrary bytes to both decoders. Neither may panic; every rejection is one
// of the package's typed errors with a class; every accepted message passes validation,
// re-encodes to a message that decodes to the same value, and is read identically by the
// encoding/json reference decoder.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		validPosition, validPrediction, `{}`, `[]`, `null`, ``,
		validPosition[:37], validPrediction + `x`,
		`{"version":2}`, `{"version":1,"lat":"52.1"}`, `{"version":1,"vehicle\u005fid":"a"}`,
		`{"version":1,"trip_id":"\ud83d\ude00","delay_s":1e400}`,
	} {
		f.Add([]byte(seed), int64(0))
	}
	f.Add([]byte(validPosition), brokerTS.UnixNano())
	f.Add([]byte(validPrediction), brokerTS.UnixNano())
	d := newDecoder(f)

	f.Fuzz(func(t *testing.T, b []byte, tsNanos int64) {
		var ts time.Time
		if tsNanos != 0 {
			ts = time.Unix(0, tsNanos).UTC()
		}
		pos, err := d.DecodePosition(b, ts)
		if err != nil {
			checkRejection(t, b, err)
		} else {
			require.NoError(t, d.ValidatePosition(pos, ts))
			again, err := d.DecodePosition(event.AppendPosition(nil, pos), ts)
			require.NoError(t, err)
			require.Equal(t, pos, again)
			ref, err := refDecodePosition(d, b, ts)
			require.NoError(t, err, "encoding/json rejects what the scanner accepted")
			require.Equal(t, pos, ref)
		}

		pred, err := d.DecodePrediction(b, ts)
		if err != nil {
			checkRejection(t, b, err)
		} else {
			require.NoError(t, d.ValidatePrediction(pred, ts))
			again, err := d.DecodePrediction(event.AppendPrediction(nil, pred), ts)
			require.NoError(t, err)
			require.Equal(t, pred, again)
			ref, err := refDecodePrediction(d, b, ts)
			require.NoError(t, err, "encoding/json rejects what the scanner accepted")
			require.Equal(t, pred, ref)
		}
	})
}

func checkRejection(t *testing.T, b []byte, err error) {
	t.Helper()
	var c dlq.Classifier
	require.True(t, errors.As(err, &c), "%T is not classified", err)
	require.NotEmpty(t, c.ErrorClass())
	n := 0
	for _, s := range []error{event.ErrSyntax, event.ErrVersion, event.ErrSchema, event.ErrRange} {
		if errors.Is(err, s) {
			n++
		}
	}
	require.Equal(t, 1, n, "%v matches %d sentinels", err, n)
	isObject := json.Valid(b) && bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte("{"))
	assert.Equal(t, !isObject, errors.Is(err, event.ErrSyntax), "syntax error %v for %q", err, b)
}
