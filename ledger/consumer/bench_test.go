package consumer

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/streamledger/streamledger/sink"
)

// benchHandler returns precomputed events (the message's Opaque is the index), so the
// benchmark measures the runtime's per-message work, not a decoder.
func benchHandler(events []Event[string]) Handler[string] {
	return func(m *kafka.Message) (Event[string], error) { return events[m.Opaque.(int)], nil }
}

// nopSink accepts every write at once, so that benchmarks measure the runtime, not a sink.
type nopSink struct{}

func (nopSink) WriteClose(context.Context, ...sink.CloseBatch) error { return nil }
func (nopSink) UpsertLatest(context.Context, []sink.StateRow) error  { return nil }
func (nopSink) ClosedThrough(context.Context, ...sink.TopicPartition) (map[sink.TopicPartition]time.Time, error) {
	return nil, nil
}

// BenchmarkHandle measures the runtime's work per message, decoding aside: late test, window
// update, ledger entry, watermark, and its share of the tick that runs every 10,000 messages
// (state flush, close, serialization of the partials, commit) against a sink that accepts
// everything at once. Events move forward one second each over 50 lines (and 200 stops with
// keys=4), every tenth carries a state row, and one in 97 is late.
func BenchmarkHandle(b *testing.B) {
	for _, keys := range []int{1, 4} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			const n = 1 << 16
			events := make([]Event[string], n)
			for i := range events {
				t := T0.Add(time.Duration(i) * time.Second)
				if i%97 == 0 {
					t = t.Add(-10 * time.Minute) // late
				}
				ks := []string{fmt.Sprintf("line-%d", i%50), "all", fmt.Sprintf("stop-%d", i%200), "op"}[:keys]
				events[i] = Event[string]{Time: t, Values: []Value[string]{{Value: float64(i % 600), Keys: ks}}}
				if i%10 == 0 {
					events[i].State = []sink.StateRow{stateRow(message(tp("t", 0), int64(i), ""), t)}
				}
			}
			h := newHarness(b, func(c *Config[string]) {
				c.Topics = map[string]Handler[string]{"t": benchHandler(events)}
				c.Hooks = nil
				c.Logger = discardLogger()
				c.Series = func(k string) sink.Series { return sink.Series{Dimension: "line", DimensionID: k} }
				c.Sink = nopSink{}
			})
			p0 := tp("t", 0)
			h.assign(p0, -1, "")
			topic := "t"
			m := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0}}
			ctx := context.Background()
			var off int64
			b.ReportAllocs()
			for b.Loop() {
				m.TopicPartition.Offset = kafka.Offset(off)
				m.Opaque = int(off % n)
				h.p.handle(m)
				off++
				if off%10_000 == 0 {
					h.p.tick(ctx, CommitTick)
				}
				if off%n == 0 {
					// Start the event sequence over on a fresh partition: times must not go back.
					h.p.revoke(ctx, h.p.assignedTPs(), true, CommitRevoke)
					h.assign(p0, -1, "")
					off = 0
				}
			}
			if h.p.fatal() != nil {
				b.Fatal(h.p.fatal())
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/event")
		})
	}
}

// BenchmarkHandleEffect measures the runtime's work per message in the effect mode, the effects
// themselves aside (ApplyEffects returns at once): decode hand-off, the batch call with its
// timeout context, ledger entry, and the tick that commits every 10,000 messages. Messages
// come one chunk of 256 at a time.
func BenchmarkHandleEffect(b *testing.B) {
	ev := Event[string]{Effect: 1}
	done := applied(defaultEffectBatch)
	h := newHarness(b, func(c *Config[string]) {
		c.Topics = map[string]Handler[string]{"t": func(*kafka.Message) (Event[string], error) { return ev, nil }}
		c.ApplyEffects = func(_ context.Context, batch []Effect) ([]sink.Result, error) { return done[:len(batch)], nil }
		c.Hooks = nil
		c.Logger = discardLogger()
		c.Sink, c.Series = nil, nil
	})
	p0 := tp("t", 0)
	h.assign(p0, -1, "")
	topic := "t"
	msgs := make([]kafka.Message, chunkSize)
	ctx := context.Background()
	var off int64
	b.ReportAllocs()
	for b.Loop() {
		m := &msgs[off%chunkSize]
		m.TopicPartition = kafka.TopicPartition{Topic: &topic, Partition: 0, Offset: kafka.Offset(off)}
		h.p.dispatch(m)
		off++
		if off%chunkSize == 0 {
			h.p.barrier()
		}
		if off%10_000 == 0 {
			h.p.tick(ctx, CommitTick)
		}
	}
	h.p.barrier()
	if h.p.fatal() != nil || h.p.halted() != nil {
		b.Fatal(h.p.fatal(), h.p.halted())
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/event")
}

// BenchmarkStateBuffer measures buffering state rows between flushes as a partition of a
// large fleet does: keys distinct keys (one string each) updated four times per flush, in
// the order a fleet reports. ns/op is per row buffered, the flush's share included.
func BenchmarkStateBuffer(b *testing.B) {
	for _, keys := range []int{1000, 50000} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			rows := make([]sink.StateRow, 4*keys)
			for i := range rows {
				rows[i] = sink.StateRow{Table: "vehicles", Key: []any{fmt.Sprintf("v%06d", i%keys)},
					ObservedAt: T0.Add(time.Duration(i) * time.Millisecond), Values: []any{int64(i)}}
			}
			var buf stateBuffer
			out, bytes := map[string][]sink.StateRow{}, map[string]int64{}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				buf.add(rows[i])
				if i++; i == len(rows) {
					buf.appendTo(out, bytes)
					clear(out["vehicles"])
					out["vehicles"], i = out["vehicles"][:0], 0
				}
			}
		})
	}
}
