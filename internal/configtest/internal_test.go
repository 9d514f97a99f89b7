package configtest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

type settings struct {
	Timeout time.Duration
	Inner   struct{ N int }
}

func accept(*testing.T, settings) {}

func TestProblems(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cases []Case[settings]
		want  []string
	}{
		{"complete", []Case[settings]{{Field: "Timeout", Refused: true}, {Field: "Inner.N", Accepted: accept}}, nil},
		{"field without a case", []Case[settings]{{Field: "Timeout", Refused: true}},
			[]string{"configtest: configtest.settings.Inner.N has no case: say what a negative value means or refuse it"}},
		{"neither", []Case[settings]{{Field: "Timeout"}, {Field: "Inner.N", Accepted: accept}},
			[]string{`configtest: case "Timeout": set exactly one of Refused and Accepted`}},
		{"both", []Case[settings]{{Field: "Timeout", Refused: true, Accepted: accept}, {Field: "Inner.N", Accepted: accept}},
			[]string{`configtest: case "Timeout": set exactly one of Refused and Accepted`}},
		{"unknown field", []Case[settings]{{Field: "Timeout", Refused: true}, {Field: "Inner.N", Accepted: accept}, {Field: "Gone", Refused: true}},
			[]string{`configtest: case "Gone" names no signed numeric field of configtest.settings (fields: [Timeout Inner.N])`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, problems(settings{}, tc.cases))
		})
	}
}

func TestJudge(t *testing.T) {
	sentinel := errors.New("config")
	named := fmt.Errorf("%w: Inner.N: expected >= 0, found -1", sentinel)
	for _, tc := range []struct {
		name    string
		refused bool
		err     error
		want    string
	}{
		{"refused as documented", true, named, ""},
		{"accepted as documented", false, nil, ""},
		{"refused field accepted", true, nil, "Inner.N = -1: expected an error naming the field, found none"},
		{"other sentinel", true, errors.New("Inner.N: bad"), "Inner.N = -1: expected an error wrapping config, found Inner.N: bad"},
		{"field not named", true, fmt.Errorf("%w: bad", sentinel), `Inner.N = -1: expected the error to name Inner.N, found "config: bad"`},
		{"accepted field refused", false, named, "Inner.N = -1: the field documents a meaning for negative values, but the configuration was refused: " + named.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, judge("Inner.N", tc.refused, tc.err, sentinel))
		})
	}
}
