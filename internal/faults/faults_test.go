package faults_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/streamledger/streamledger/internal/faults"
)

func TestAt(t *testing.T) {
	boom := errors.New("boom")
	var seen []faults.Point
	armed := faults.With(context.Background(), func(_ context.Context, p faults.Point, a faults.Attempt) error {
		seen = append(seen, p)
		if p == faults.BeforeCommit && a.N == 1 {
			return boom
		}
		return nil
	})
	tests := []struct {
		name string
		ctx  context.Context
		p    faults.Point
		n    int
		want error
	}{
		{"unarmed", context.Background(), faults.BeforeCommit, 1, nil},
		{"disarmed", faults.With(armed, nil), faults.BeforeCommit, 1, nil},
		{"armed, other point", armed, faults.BeforeBegin, 1, nil},
		{"armed, the point", armed, faults.BeforeCommit, 1, boom},
		{"armed, the point, a retry", armed, faults.BeforeCommit, 2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := faults.At(tt.ctx, tt.p, faults.Attempt{N: tt.n})
			if tt.want == nil {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, tt.want)
			}
		})
	}
	assert.Equal(t, []faults.Point{faults.BeforeBegin, faults.BeforeCommit, faults.BeforeCommit}, seen)
	assert.Equal(t, "after-marker", faults.AfterMarker.String())
	assert.Equal(t, "Point(9)", faults.Point(9).String())
}
