package sinkfixture

import (
	"sync"

	"github.com/streamledger/streamledger/sink"
)

// Hooks records what a sink reports to its hooks ([sink.HookWriteClose] and
// [sink.HookUpsertLatest]). It is safe for concurrent use.
type Hooks struct {
	mu     sync.Mutex
	closes []sink.WriteCloseInfo
	latest []sink.UpsertLatestInfo
}

// OnWriteClose implements sink.HookWriteClose.
func (h *Hooks) OnWriteClose(i sink.WriteCloseInfo) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closes = append(h.closes, i)
}

// OnUpsertLatest implements sink.HookUpsertLatest.
func (h *Hooks) OnUpsertLatest(i sink.UpsertLatestInfo) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.latest = append(h.latest, i)
}

// Closes returns the WriteClose reports so far, in order.
func (h *Hooks) Closes() []sink.WriteCloseInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]sink.WriteCloseInfo(nil), h.closes...)
}

// Upserts returns the UpsertLatest reports so far, in order.
func (h *Hooks) Upserts() []sink.UpsertLatestInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]sink.UpsertLatestInfo(nil), h.latest...)
}
