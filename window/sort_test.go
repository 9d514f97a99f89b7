package window

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSortFloats(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	gens := map[string]func() float64{
		"ints":      func() float64 { return math.Round(r.ExpFloat64()*120 - 30) },
		"floats":    func() float64 { return r.NormFloat64() * 1e6 },
		"extremes":  func() float64 { return []float64{-MaxValue, MaxValue, 0, -1e-300, 1e-300, 5}[r.IntN(6)] },
		"all equal": func() float64 { return 3 },
	}
	var sc scratch
	for name, gen := range gens {
		for _, n := range []int{0, 1, radixMin - 1, radixMin, 257, 1024, 3000} {
			v := make([]float64, n)
			for i := range v {
				v[i] = gen()
			}
			want := slices.Clone(v)
			slices.Sort(want)
			sortFloats(v, &sc)
			require.Equal(t, want, v, "%s n=%d", name, n)
		}
	}
}
