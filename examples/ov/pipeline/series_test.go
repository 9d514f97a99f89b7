package pipeline

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/examples/ov/tables"
	"github.com/streamledger/streamledger/sink"
)

func TestNewSeriesMapsKeysAndSharesMaps(t *testing.T) {
	series := NewSeries()
	keys := []tables.Key{
		{Dimension: tables.DimLine, ID: "GVB:1", Operator: "GVB"},
		{Dimension: tables.DimLine, ID: "GVB:2", Operator: "GVB"},
		{Dimension: tables.DimOperator, ID: "GVB", Operator: "GVB"},
		{Dimension: tables.DimLine, ID: "RET:1", Operator: "RET"},
		{Dimension: tables.DimStation, ID: "stop-1"},
		{Dimension: tables.DimNetwork, ID: tables.NetworkID},
	}
	op := func(o string) map[string]string { return map[string]string{tables.OperatorAttr: o} }
	want := []sink.Series{
		{Dimension: tables.DimLine, DimensionID: "GVB:1", Attrs: op("GVB")},
		{Dimension: tables.DimLine, DimensionID: "GVB:2", Attrs: op("GVB")},
		{Dimension: tables.DimOperator, DimensionID: "GVB", Attrs: op("GVB")},
		{Dimension: tables.DimLine, DimensionID: "RET:1", Attrs: op("RET")},
		{Dimension: tables.DimStation, DimensionID: "stop-1"},
		{Dimension: tables.DimNetwork, DimensionID: tables.NetworkID},
	}
	for i, k := range keys {
		assert.Equal(t, want[i], series(k), "key %+v", k)
	}
	gvb1, gvb2, ret := series(keys[0]).Attrs, series(keys[1]).Attrs, series(keys[3]).Attrs
	gvb1["probe"] = "x" // only to see which maps are one; callers never write to them
	assert.Equal(t, "x", gvb2["probe"], "one map per operator")
	assert.NotContains(t, ret, "probe", "operators apart")
	assert.Nil(t, series(keys[4]).Attrs, "a key without operator has no attributes")
}

func TestNewSeriesBoundsItsMaps(t *testing.T) {
	series := NewSeries()
	for i := range maxSharedAttrs {
		series(tables.Key{Dimension: tables.DimOperator, ID: "x", Operator: fmt.Sprint("op", i)})
	}
	past := tables.Key{Dimension: tables.DimOperator, ID: "x", Operator: "one too many"}
	a, b := series(past).Attrs, series(past).Attrs
	require.Equal(t, map[string]string{tables.OperatorAttr: "one too many"}, a)
	a["probe"] = "x"
	assert.NotContains(t, b, "probe", "past the bound each series gets a map of its own")
}

func TestNewSeriesConcurrentUse(t *testing.T) {
	series := NewSeries()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 1000 {
				k := tables.Key{Dimension: tables.DimLine, ID: "l", Operator: fmt.Sprint("op", (g+i)%7)}
				assert.Equal(t, k.Operator, series(k).Attrs[tables.OperatorAttr])
			}
		})
	}
	wg.Wait()
}
