package postgres_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/postgres"
)

// Every column type goes in and comes back as it was, NULLs included, whichever way the
// rows are sent: a column whose rows mix values and NULLs, and one holding only NULLs.
func TestStateColumnsRoundTrip(t *testing.T) {
	spec := sink.StateSpec{
		Table:      "every_type",
		Key:        []sink.Column{{Name: "id", Type: sink.Text}},
		ObservedAt: sink.Column{Name: "observed_at", Type: sink.Timestamp},
		Values: []sink.Column{
			{Name: "t", Type: sink.Text}, {Name: "i32", Type: sink.Int32}, {Name: "i64", Type: sink.Int64},
			{Name: "f", Type: sink.Float64}, {Name: "b", Type: sink.Bool}, {Name: "ts", Type: sink.Timestamp},
			{Name: "raw", Type: sink.Bytes}, {Name: "none", Type: sink.Text},
		},
	}
	at := time.Date(2026, 3, 10, 7, 45, 0, 123456000, time.UTC)
	rows := []sink.StateRow{
		{Table: spec.Table, Key: []any{"a"}, ObservedAt: at, Values: []any{"GVB:17", int32(-7), int64(1) << 40, 52.375, true, at.Add(time.Hour), []byte{0, 1, 255}, nil}},
		{Table: spec.Table, Key: []any{"b"}, ObservedAt: at, Values: []any{nil, nil, nil, nil, nil, nil, nil, nil}},
		{Table: spec.Table, Key: []any{"c"}, ObservedAt: at, Values: []any{"", int32(0), int64(0), -0.5, false, at, []byte{}, nil}},
	}
	for _, st := range strategies {
		t.Run(st.String(), func(t *testing.T) {
			ctx := testCtx(t)
			s, _ := newSink(t, func(c *postgres.Config) { c.States = []sink.StateSpec{spec} })
			postgres.SetStrategy(s, st)
			require.NoError(t, s.UpsertLatest(ctx, rows))
			for _, want := range rows {
				got, ok, err := s.Latest(ctx, spec.Table, want.Key...)
				require.NoError(t, err)
				require.True(t, ok, "row %v", want.Key)
				assert.True(t, want.ObservedAt.Equal(got.ObservedAt), "row %v: observed at %v, want %v", want.Key, got.ObservedAt, want.ObservedAt)
				require.Len(t, got.Values, len(want.Values))
				for i, v := range want.Values {
					if tv, ok := v.(time.Time); ok {
						assert.True(t, tv.Equal(got.Values[i].(time.Time)), "row %v, %s", want.Key, spec.Values[i].Name)
						continue
					}
					assert.Equal(t, v, got.Values[i], "row %v, %s", want.Key, spec.Values[i].Name)
				}
			}
		})
	}

	// Values of other Go types than the columns' own go through pgx's conversions, whichever
	// way the rows are sent.
	for _, st := range strategies {
		t.Run(st.String()+"/converted", func(t *testing.T) {
			ctx := testCtx(t)
			s, _ := newSink(t, func(c *postgres.Config) { c.States = []sink.StateSpec{spec} })
			postgres.SetStrategy(s, st)
			row := sink.StateRow{Table: spec.Table, Key: []any{"d"}, ObservedAt: at,
				Values: []any{"x", int64(5), int32(6), float32(0.5), nil, nil, nil, nil}}
			require.NoError(t, s.UpsertLatest(ctx, []sink.StateRow{row}))
			got, ok, err := s.Latest(ctx, spec.Table, "d")
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, []any{"x", int32(5), int64(6), 0.5, nil, nil, nil, nil}, got.Values)
		})
	}
}
