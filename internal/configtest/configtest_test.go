package configtest_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/streamledger/streamledger/internal/configtest"
)

var errConfig = errors.New("config")

type retry struct {
	Attempts int
	Backoff  time.Duration
}

type config struct {
	Name    string
	Timeout time.Duration
	Ratio   float64
	Retry   retry
	At      time.Time
	Size    uint
}

func build(c config) error {
	switch {
	case c.Timeout < 0:
		return fmt.Errorf("%w: Timeout: expected >= 0, found %v", errConfig, c.Timeout)
	case c.Retry.Attempts < 0:
		return fmt.Errorf("%w: Retry.Attempts: expected >= 0, found %d", errConfig, c.Retry.Attempts)
	}
	return nil
}

func TestFields(t *testing.T) {
	assert.Equal(t, []string{"Timeout", "Ratio", "Retry.Attempts", "Retry.Backoff"}, configtest.Fields(config{}))
	c := configtest.WithNegative(config{Ratio: 0.5}, "Retry.Backoff")
	assert.Equal(t, config{Ratio: 0.5, Retry: retry{Backoff: -1}}, c)
}

func TestNegative(t *testing.T) {
	var checked []string
	configtest.Negative(t, config{}, errConfig, build, []configtest.Case[config]{
		{Field: "Timeout", Refused: true},
		{Field: "Ratio", Accepted: func(t *testing.T, c config) { checked = append(checked, "Ratio") }},
		{Field: "Retry.Attempts", Refused: true},
		{Field: "Retry.Backoff", Accepted: func(t *testing.T, c config) {
			assert.Equal(t, time.Duration(-1), c.Retry.Backoff)
			checked = append(checked, "Retry.Backoff")
		}},
	})
	assert.Equal(t, []string{"Ratio", "Retry.Backoff"}, checked)
}
