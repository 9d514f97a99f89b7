package sinkfixture

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/sink"
)

// GatedReader is a sink.GatedWindowWriter that reads back its progress.
type GatedReader interface {
	sink.GatedWindowWriter
	sink.ProgressReader
}

// GateHoldsCloses checks what sink.GatedWindowWriter says of a sink whose gate runs in an
// open transaction: while gate of a call through g blocks, a close write of the same table
// through w (another writer, or g itself) waits, and it is written once the gate lets the
// gated call commit. first and second are close batches of different partitions; g then
// reads back the closed_through of both.
func GateHoldsCloses(t *testing.T, ctx context.Context, g GatedReader, w sink.WindowWriter, first, second sink.CloseBatch) {
	t.Helper()
	entered, release := make(chan struct{}), make(chan struct{})
	gated := make(chan error, 1)
	go func() {
		gated <- g.WriteCloseGated(ctx, func(ctx context.Context) error {
			close(entered)
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}, first)
	}()
	<-entered
	other := make(chan error, 1)
	go func() { other <- w.WriteClose(ctx, second) }()
	select {
	case err := <-other:
		t.Fatalf("a close of the same table returned (%v) while a gate held the table's lock", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	require.NoError(t, <-gated)
	require.NoError(t, <-other, "the waiting close is written once the gated one commits")
	got, err := g.ClosedThrough(ctx, first.Source, second.Source)
	require.NoError(t, err)
	assert.Equal(t, map[sink.TopicPartition]time.Time{first.Source: first.ClosedThrough, second.Source: second.ClosedThrough}, got)
}
