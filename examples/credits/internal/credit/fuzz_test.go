package credit_test

import (
	"errors"
	"testing"
	"unicode"

	"github.com/streamledger/streamledger/examples/credits/internal/credit"
)

// FuzzDecode: Decode never panics, every error is an *Error with a class, and every credit it
// accepts is valid and survives its canonical encoding unchanged.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"op_id":"e42","account":"a7","amount":10}`,
		`{"amount":1,"account":"a","op_id":"b"}`,
		`{"op_id":"e42","account":"a7","amount":-1}`,
		`{"op_id":"e\u0000","account":"a7","amount":10}`,
		`{"op_id":"e42","account":"a7","amount":1e3}`,
		`{"op_id":"e42","account":"a7","amount":10,"amount":10}`,
		`[1,2]`, `{`, ``, `"x"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := credit.Decode(in)
		if err != nil {
			var ce *credit.Error
			if !errors.As(err, &ce) || ce.Class == "" {
				t.Fatalf("Decode(%q): error %v (%T) is not a classified *Error", in, err, err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Decode(%q) accepted an invalid credit %+v: %v", in, c, err)
		}
		if c.Amount <= 0 || c.ID == "" || c.Account == "" {
			t.Fatalf("Decode(%q) = %+v", in, c)
		}
		for _, s := range []string{c.ID, c.Account} {
			for _, r := range s {
				if unicode.IsControl(r) {
					t.Fatalf("Decode(%q) accepted a control character in %q", in, s)
				}
			}
		}
		again, err := credit.Decode(c.Payload())
		if err != nil || again != c {
			t.Fatalf("canonical payload %q of %+v decodes to %+v, %v", c.Payload(), c, again, err)
		}
	})
}
