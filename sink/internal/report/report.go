// Package report calls the hooks of a sink implementation (sink.Hook): it checks them when
// the sink is made and reports each call to those that implement the matching interface.
package report

import (
	"fmt"

	"github.com/streamledger/streamledger/sink"
)

// Check returns an error wrapping sink.ErrConfig, naming field and the index, for a hook
// that implements none of sink.HookWriteClose and sink.HookUpsertLatest: a mistake, such as
// a method with a pointer receiver on a value, that would otherwise go unnoticed.
func Check(field string, hooks []sink.Hook) error {
	for i, h := range hooks {
		_, wc := h.(sink.HookWriteClose)
		_, latest := h.(sink.HookUpsertLatest)
		if !wc && !latest {
			return fmt.Errorf("%w: %s[%d]: %T implements none of sink.HookWriteClose and sink.HookUpsertLatest", sink.ErrConfig, field, i, h)
		}
	}
	return nil
}

// WriteClose calls every hook in hooks that implements sink.HookWriteClose.
func WriteClose(hooks []sink.Hook, info sink.WriteCloseInfo) {
	for _, h := range hooks {
		if o, ok := h.(sink.HookWriteClose); ok {
			o.OnWriteClose(info)
		}
	}
}

// UpsertLatest calls every hook in hooks that implements sink.HookUpsertLatest.
func UpsertLatest(hooks []sink.Hook, info sink.UpsertLatestInfo) {
	for _, h := range hooks {
		if o, ok := h.(sink.HookUpsertLatest); ok {
			o.OnUpsertLatest(info)
		}
	}
}
