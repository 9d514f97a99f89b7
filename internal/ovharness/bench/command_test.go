package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPlan(t *testing.T) {
	names := func(o Options) []string {
		cs, err := Plan(o)
		require.NoError(t, err)
		var n []string
		for _, c := range cs {
			n = append(n, c.Name)
		}
		return n
	}
	full := Options{Scale1x: 0.5, SizePartitions: 6, Repeat: 1}
	assert.Equal(t, []string{"p1-1x", "p2-1x", "p6-1x", "p12-1x", "p6-10x", "p6-100x"}, names(full))
	quick := full
	quick.Quick = true
	assert.Equal(t, []string{"p1-1x", "p6-1x", "p6-10x"}, names(quick))
	only := full
	only.Cases = "p6-100x"
	cs, err := Plan(only)
	require.NoError(t, err)
	require.Len(t, cs, 1)
	assert.Equal(t, 7*time.Minute+30*time.Second, cs[0].Duration)
	assert.InDelta(t, 27.5, cs[0].Scale, 0.5, "100x needs about 55 times the 1x scale")
	assert.Equal(t, 0.5, scaleFor(0.5, 1))

	procs := full
	procs.Cases, procs.Procs, procs.BufferLimit = "p6-1x", "1,2", 1<<20
	cs, err = Plan(procs)
	require.NoError(t, err)
	require.Len(t, cs, 2)
	assert.Equal(t, "p6-1x-gmp1", cs[0].Name)
	assert.Equal(t, 2, cs[1].Procs)
	assert.Equal(t, int64(1<<20), cs[1].BufferLimit)

	for _, bad := range []Options{
		{Scale1x: 0.5, SizePartitions: 6, Repeat: 0},
		{Scale1x: 0.5, SizePartitions: 6, Repeat: 1, Cases: "p7-1x"},
		{Scale1x: 0.5, SizePartitions: 6, Repeat: 1, Partitions: "1,x"},
		{Scale1x: 0.5, SizePartitions: 6, Repeat: 1, Procs: "0"},
	} {
		_, err := Plan(bad)
		assert.Error(t, err, "%+v", bad)
	}
}
