package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBenchPlan(t *testing.T) {
	names := func(o benchOptions) []string {
		cs, err := benchPlan(o)
		require.NoError(t, err)
		var n []string
		for _, c := range cs {
			n = append(n, c.Name)
		}
		return n
	}
	full := benchOptions{scale1x: 0.5, basePartitions: 6}
	assert.Equal(t, []string{"p1-1x", "p2-1x", "p6-1x", "p12-1x", "p6-10x", "p6-100x"}, names(full))
	quick := full
	quick.quick = true
	assert.Equal(t, []string{"p1-1x", "p6-1x", "p6-10x"}, names(quick))
	only := full
	only.only = "p6-100x"
	cs, err := benchPlan(only)
	require.NoError(t, err)
	require.Len(t, cs, 1)
	assert.Equal(t, 7*time.Minute+30*time.Second, cs[0].Duration)
	assert.InDelta(t, 27.5, cs[0].Scale, 0.5, "100x needs about 55 times the 1x scale")
	assert.Equal(t, 0.5, scaleFor(0.5, 1))
}
