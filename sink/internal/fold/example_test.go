package fold_test

import (
	"fmt"

	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/fold"
	"github.com/streamledger/streamledger/window"
)

// A sink makes one Codec and stores each (window, source)'s partials as one blob; a later
// read decodes it with the attribute names the sink declares now.
func ExampleCodec() {
	z, err := fold.NewCodec()
	if err != nil {
		panic(err)
	}
	st := window.NewStats()
	for _, v := range []float64{60, 90, 300} {
		if err := st.Add(v); err != nil {
			panic(err)
		}
	}
	stats, err := st.MarshalBinary()
	if err != nil {
		panic(err)
	}
	operator := "GVB"
	b := fold.Blob{
		Sources: []sink.TopicPartition{{Topic: "arrivals", Partition: 3}},
		Entries: []fold.Entry{{Dimension: "line", DimensionID: "GVB:17", Attrs: []*string{&operator}, Stats: stats}},
	}
	enc, err := z.Encode(nil, []string{"operator"}, b)
	if err != nil {
		panic(err)
	}
	got, err := z.Decode(enc, []string{"operator", "region"})
	if err != nil {
		panic(err)
	}
	e := got.Entries[0]
	fmt.Println(got.Sources[0], e.Dimension, e.DimensionID, *e.Attrs[0], e.Attrs[1] == nil)
	// Output: arrivals[3] line GVB:17 GVB true
}
