package window

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestBounds(t *testing.T) {
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	ams := time.FixedZone("CEST", 2*3600)
	tests := []struct {
		name       string
		t          time.Time
		size       time.Duration
		start, end string
	}{
		{"inside", utc("2024-05-01T08:07:30Z"), 5 * time.Minute, "2024-05-01T08:05:00Z", "2024-05-01T08:10:00Z"},
		{"on start", utc("2024-05-01T08:05:00Z"), 5 * time.Minute, "2024-05-01T08:05:00Z", "2024-05-01T08:10:00Z"},
		{"just before end", utc("2024-05-01T08:09:59.999999999Z"), 5 * time.Minute, "2024-05-01T08:05:00Z", "2024-05-01T08:10:00Z"},
		{"default size", utc("2024-05-01T08:07:30Z"), 0, "2024-05-01T08:05:00Z", "2024-05-01T08:10:00Z"},
		{"other zone", time.Date(2024, 5, 1, 10, 7, 30, 0, ams), 5 * time.Minute, "2024-05-01T08:05:00Z", "2024-05-01T08:10:00Z"},
		{"7 minutes, epoch aligned", utc("1970-01-01T00:15:00Z"), 7 * time.Minute, "1970-01-01T00:14:00Z", "1970-01-01T00:21:00Z"},
		{"before epoch", utc("1969-12-31T23:58:00Z"), 5 * time.Minute, "1969-12-31T23:55:00Z", "1970-01-01T00:00:00Z"},
		{"year 1", utc("0001-01-01T00:00:00Z"), time.Hour, "0001-01-01T00:00:00Z", "0001-01-01T01:00:00Z"},
		{"far future", utc("9999-12-31T23:59:59Z"), 7 * time.Minute, "", ""},
		{"sub-second", utc("2024-05-01T08:07:30.123456789Z"), 100 * time.Millisecond, "2024-05-01T08:07:30.1Z", "2024-05-01T08:07:30.2Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start, end := Bounds(tt.t, tt.size)
			if tt.name != "far future" {
				assert.Equal(t, tt.start, start.Format(time.RFC3339Nano))
				assert.Equal(t, tt.end, end.Format(time.RFC3339Nano))
			}
			assert.Equal(t, time.UTC, start.Location())
			assert.False(t, tt.t.Before(start))
			assert.True(t, tt.t.Before(end))
			size := tt.size
			if size == 0 {
				size = DefaultSize
			}
			assert.Equal(t, size, end.Sub(start))
			// Epoch alignment, checked in whole minutes where the size allows.
			if size%time.Minute == 0 {
				mins := start.Unix() / 60
				if start.Unix()%60 != 0 {
					t.Fatalf("start %v not on a minute", start)
				}
				assert.Zero(t, ((mins%int64(size/time.Minute))+int64(size/time.Minute))%int64(size/time.Minute))
			}
		})
	}
}
