package event_test

import (
	"testing"

	"github.com/streamledger/streamledger/examples/ov/event"
)

// BenchmarkDecode compares the hand-written scanner with the encoding/json reference, both
// validating in full, on the canonical messages.
func BenchmarkDecode(b *testing.B) {
	d := newDecoder(b)
	pos, pred := []byte(validPosition), []byte(validPrediction)
	run := func(name string, msg []byte, decode func([]byte) error) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(msg)))
			for b.Loop() {
				if err := decode(msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	run("position/scanner", pos, func(m []byte) error { _, err := d.DecodePosition(m, brokerTS); return err })
	run("position/encoding_json", pos, func(m []byte) error { _, err := refDecodePosition(d, m, brokerTS); return err })
	run("prediction/scanner", pred, func(m []byte) error { _, err := d.DecodePrediction(m, brokerTS); return err })
	run("prediction/encoding_json", pred, func(m []byte) error { _, err := refDecodePrediction(d, m, brokerTS); return err })
}

// BenchmarkDecodeRejected measures the error path, which also decides the error's precedence.
func BenchmarkDecodeRejected(b *testing.B) {
	d := newDecoder(b)
	for _, c := range []struct{ name, msg string }{
		{"truncated", validPrediction[:60]},
		{"range", edit(b, validPrediction, `123`, `99999`)},
		{"type", edit(b, validPrediction, `123`, `"123"`)},
	} {
		msg := []byte(c.msg)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.DecodePrediction(msg, brokerTS); err == nil {
					b.Fatal("accepted")
				}
			}
		})
	}
}

func BenchmarkAppend(b *testing.B) {
	pos, pred := wantPosition(), wantPrediction()
	buf := make([]byte, 0, 512)
	b.Run("position", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf = event.AppendPosition(buf[:0], pos)
		}
	})
	b.Run("prediction", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf = event.AppendPrediction(buf[:0], pred)
		}
	})
}
