package credit_test

import (
	"testing"

	"github.com/streamledger/streamledger/examples/credits/internal/credit"
)

// BenchmarkDecode measures the per-message cost of decoding a credit and building its
// operation (canonical payload), the CPU part of the consumer's hot path.
func BenchmarkDecode(b *testing.B) {
	msg := []byte(`{"op_id":"credit-000042","account":"acct-0007","amount":1250}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		c, err := credit.Decode(msg)
		if err != nil {
			b.Fatal(err)
		}
		_ = c.Operation()
	}
}
