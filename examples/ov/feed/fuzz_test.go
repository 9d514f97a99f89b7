package feed_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/examples/ov/feed"
)

// FuzzReader reads arbitrary feed files: it never panics, and whatever it reads it writes
// back to a file that reads the same.
func FuzzReader(f *testing.F) {
	f.Add([]byte(`{"topic":"t","key":"k","timestamp":"2026-03-10T08:00:00Z","value":"{}"}` + "\n"))
	f.Add([]byte(`{"topic":"t","key_b64":"/w==","timestamp":"2026-03-10T08:00:00.001Z","value_b64":"e+KC","intent":"malformed","fault":"truncated"}`))
	f.Add([]byte("\n\n{\"topic\":\"t\"}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := feed.ReadAll(bytes.NewReader(b))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		w := feed.NewWriter(&buf)
		for _, r := range recs {
			require.NoError(t, w.Write(r))
		}
		require.NoError(t, w.Flush())
		again, err := feed.ReadAll(&buf)
		require.NoError(t, err)
		require.Equal(t, len(recs), len(again))
		for i := range recs {
			require.Equal(t, recs[i].Topic, again[i].Topic)
			require.Equal(t, recs[i].Key, again[i].Key)
			require.Equal(t, recs[i].Value, again[i].Value)
			require.True(t, recs[i].Timestamp.Equal(again[i].Timestamp))
			require.Equal(t, recs[i].Intent, again[i].Intent)
		}
	})
}
