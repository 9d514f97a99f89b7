package ledger_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/ledger"
)

func TestMetadataRoundTrip(t *testing.T) {
	for _, w := range []time.Time{t0, t0.Add(123456789 * time.Nanosecond), time.Unix(0, 0).UTC(), time.Unix(-5, 0).UTC()} {
		s := ledger.EncodeMetadata(ledger.Checkpoint{Watermark: w})
		assert.Less(t, len(s), 40)
		got, err := ledger.DecodeMetadata(s)
		require.NoError(t, err)
		assert.True(t, w.Equal(got.Watermark), "%v != %v", w, got.Watermark)
	}
	assert.Equal(t, "sl1;wm=1714564800000000000", ledger.EncodeMetadata(ledger.Checkpoint{Watermark: t0}))
}

func TestDecodeMetadata(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Time
		wantErr error
		msg     string
	}{
		{in: "sl1;wm=1714564800000000000", want: t0},
		{in: "sl1;x=1;wm=1714564800000000000;later=field", want: t0},
		{in: "", wantErr: ledger.ErrNoMetadata},
		{in: "sl2;wm=1", wantErr: ledger.ErrBadMetadata, msg: `expected prefix "sl1;"`},
		{in: "hello", wantErr: ledger.ErrBadMetadata, msg: "found \"hello\""},
		{in: "sl1;wm=abc", wantErr: ledger.ErrBadMetadata, msg: "expected Unix nanoseconds"},
		{in: "sl1;wm", wantErr: ledger.ErrBadMetadata, msg: "expected key=value"},
		{in: "sl1;other=1", wantErr: ledger.ErrBadMetadata, msg: "field wm missing"},
		{in: "sl1;wm=1;wm=2", wantErr: ledger.ErrBadMetadata, msg: "twice"},
		{in: "sl1;wm=99999999999999999999", wantErr: ledger.ErrBadMetadata},
		{in: "sl1;" + strings.Repeat("a", 5000), wantErr: ledger.ErrBadMetadata, msg: "at most 4096"},
	}
	for _, tt := range tests {
		t.Run(tt.in[:min(len(tt.in), 30)], func(t *testing.T) {
			got, err := ledger.DecodeMetadata(tt.in)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				assert.Contains(t, err.Error(), tt.msg)
				return
			}
			require.NoError(t, err)
			assert.True(t, tt.want.Equal(got.Watermark))
		})
	}
}

func FuzzDecodeMetadata(f *testing.F) {
	f.Add("sl1;wm=1714564800000000000")
	f.Add("sl1;wm=-1;x=y")
	f.Add("sl1;;")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ledger.DecodeMetadata(s)
		if err != nil {
			if s != "" {
				require.ErrorIs(t, err, ledger.ErrBadMetadata)
			}
			return
		}
		// Whatever decodes re-encodes to metadata that decodes to the same watermark.
		again, err := ledger.DecodeMetadata(ledger.EncodeMetadata(c))
		require.NoError(t, err)
		require.True(t, c.Watermark.Equal(again.Watermark))
	})
}
