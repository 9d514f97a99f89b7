package credit

import (
	"encoding/json"
	"testing"
)

// FuzzCanonical: the canonical fast paths agree with the general ones. A message the fast
// decoder accepts decodes to the same credit through the strict decoder, and the fast
// encoding of a credit is byte for byte what encoding/json writes, so markers keep their
// payload hashes.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{
		`{"op_id":"e42","account":"a7","amount":10}`,
		`{"op_id":"e<42","account":"a7","amount":10}`,
		`{"op_id":"e42","account":"a7","amount":010}`,
		`{"op_id":"e42","account":"a7","amount":9223372036854775808}`,
		`{"op_id":"e","account":"","amount":1}`,
		`{"op_id":"a","account":"b","amount":1}` + "\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if fast, ok := decodeCanonical(in); ok {
			strict, err := decodeStrict(in)
			if err != nil || strict != fast {
				t.Fatalf("decodeCanonical(%q) = %+v; decodeStrict: %+v, %v", in, fast, strict, err)
			}
		}
		c, err := decodeStrict(in)
		if err != nil {
			return
		}
		want, _ := json.Marshal(c)
		if got := c.Payload(); string(got) != string(want) {
			t.Fatalf("Payload of %+v = %q, encoding/json writes %q", c, got, want)
		}
		if fast, ok := decodeCanonical(want); plain(c.ID) && plain(c.Account) && (!ok || fast != c) {
			t.Fatalf("the canonical encoding %q of %+v is not read back by the fast path: %+v, %v", want, c, fast, ok)
		}
	})
}
