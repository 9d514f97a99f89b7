package consumer

import (
	"maps"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The maps come from Config.Series, which may share one between series: merging the
// attributes of two window keys of one series must never write into either.
func TestAddAttrsNeverWritesItsArguments(t *testing.T) {
	tests := []struct {
		name       string
		into, from map[string]string
		want       map[string]string
		same       bool // the result is into itself: nothing to add
	}{
		{name: "nothing to add", into: map[string]string{"a": "1"}, from: nil, want: map[string]string{"a": "1"}, same: true},
		{name: "present names keep the first value", into: map[string]string{"a": "1"}, from: map[string]string{"a": "2"},
			want: map[string]string{"a": "1"}, same: true},
		{name: "a missing name is added to a copy", into: map[string]string{"a": "1"}, from: map[string]string{"a": "2", "b": "3"},
			want: map[string]string{"a": "1", "b": "3"}},
		{name: "into without attributes", into: nil, from: map[string]string{"b": "3"}, want: map[string]string{"b": "3"}},
		{name: "neither has any", into: nil, from: nil, want: nil, same: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			into, from := maps.Clone(tt.into), maps.Clone(tt.from)
			got := addAttrs(into, from)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.into, into, "into unchanged")
			assert.Equal(t, tt.from, from, "from unchanged")
			if tt.same && into != nil {
				got["probe"] = "x"
				assert.Equal(t, "x", into["probe"], "into itself is returned when nothing is added")
			}
		})
	}
}
